package dashboard

import (
	"context"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Source is what the dashboard reads: the same queries the CLI makes,
// answered by the GCS and the nodes. The head implements it on its own
// connection (node/dashboard.go). Its methods are called concurrently.
type Source interface {
	// Status is `atoll status`: every node the GCS knows, with its latest
	// load report.
	Status(ctx context.Context) (*Status, error)
	// Nodes is `atoll list nodes`: the GCS's node table, dead nodes
	// included.
	Nodes(ctx context.Context) ([]*atollpb.NodeInfo, error)
	// Actors is `atoll list actors`.
	Actors(ctx context.Context) ([]*atollpb.ActorInfo, error)
	// Jobs is `atoll list jobs`.
	Jobs(ctx context.Context) ([]*atollpb.JobInfo, error)
	// PlacementGroups is `atoll list placement-groups`.
	PlacementGroups(ctx context.Context) ([]*atollpb.PlacementGroupInfo, error)
	// Timeline is `atoll timeline`: the task attempts the live nodes
	// finished recently, ordered by start.
	Timeline(ctx context.Context) ([]TaskAttempt, error)
	// NodeLog is the end of node's log file, at most maxBytes.
	NodeLog(ctx context.Context, node ids.NodeID, maxBytes int) (*atollpb.NodeLog, error)
	// JobLog is the end of a submitted job's log (`atoll job logs`), at
	// most maxBytes, read from the node that runs its driver.
	JobLog(ctx context.Context, job ids.JobID, maxBytes int) (*atollpb.LogChunk, error)
}

// Status is the cluster as `atoll status` shows it.
type Status struct {
	Address string
	Nodes   []NodeStatus
}

// NodeStatus is one node: what the GCS knows of it and, if it reports,
// its latest load report (clusterclient.NodeStatus).
type NodeStatus struct {
	NodeID    ids.NodeID
	Hostname  string
	IsHead    bool
	Driver    bool
	Alive     bool
	Reporting bool
	Total     map[string]float64
	Available map[string]float64
	Queued    int
	Running   int
	// The object store: bytes used of the capacity, pinned, objects;
	// spilled bytes and files on disk now; bytes spilled and restored
	// ever; objects and bytes pulled from other nodes.
	StoreUsed, StoreCap, PinnedBytes, Objects uint64
	SpilledBytes, SpillFiles                  uint64
	SpilledTotal, RestoredTotal               uint64
	Pulls, PulledBytes                        uint64
}

// TaskAttempt is one finished task attempt (clusterclient.TimelineEvent).
type TaskAttempt struct {
	NodeID   ids.NodeID
	WorkerID ids.WorkerID
	TaskID   ids.TaskID
	// JobID is zero when unknown, TraceID "" when the driver did not
	// trace the task.
	JobID      ids.JobID
	TraceID    string
	Name       string
	Start, End time.Time
	Failed     bool
	// Error and RemoteStack are why a failed attempt failed ("" when the
	// node did not send them).
	Error, RemoteStack string
}
