package clusterclient

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// TimelineEvent is one task attempt a node ran, an actor's creation or
// call, an object it pulled from another node, or a spill or restore of
// its store: where, when, and whether it failed (`atoll timeline` turns
// them into a Chrome trace). Transfers, spills and restores have no
// worker or task (zero ids).
type TimelineEvent struct {
	NodeID   string    `json:"node_id"`
	WorkerID string    `json:"worker_id"`
	TaskID   string    `json:"task_id"`
	Name     string    `json:"name"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Failed   bool      `json:"failed"`
	// JobID is the task's job (hex; "" if unknown) and TraceID the trace
	// of its submit span (32 hex digits; "" when the driver did not trace).
	JobID   string `json:"job_id,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	// Kind is raylet.EventTask, EventActorCreation, EventActorCall,
	// EventTransfer, EventSpill or EventRestore.
	Kind   string `json:"kind"`
	Bytes  uint64 `json:"bytes,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Error and RemoteStack are why a failed attempt failed (the newest
	// failed attempts of each node carry them).
	Error       string `json:"error,omitempty"`
	RemoteStack string `json:"remote_stack,omitempty"`
}

// timelineTimeout bounds each node's answer to GetTimeline (and to every
// request askLiveNodes sends).
const timelineTimeout = 5 * time.Second

// GetTimeline asks every live node of the cluster at address ("" or
// "auto": the local head's) for the task attempts it finished recently
// (the last raylet.TimelineCap per node) and returns them ordered by start.
// Nodes that do not answer within the context (and 5 s) are left out, as
// are events with malformed ids.
func GetTimeline(ctx context.Context, address string, creds nodeconfig.Credentials) ([]TimelineEvent, error) {
	nc, _, err := Dial(address, "atoll-timeline", creds)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return TimelineOn(ctx, nc)
}

// TimelineOn is GetTimeline on an open connection to the cluster.
func TimelineOn(ctx context.Context, nc *nats.Conn) ([]TimelineEvent, error) {
	var (
		mu  sync.Mutex
		out []TimelineEvent
	)
	_, err := askLiveNodes(ctx, nc, cluster.TimelineSubject, nil, func(node ids.NodeID, _ *atollpb.NodeInfo, data []byte) {
		var evs atollpb.TaskEvents
		if err := proto.Unmarshal(data, &evs); err != nil {
			slog.Debug("atoll timeline: bad answer", "node", node.String(), "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs.Events {
			worker, werr := ids.FromBytes(e.WorkerId)
			task, terr := ids.FromBytes(e.TaskId)
			if werr != nil || terr != nil {
				continue
			}
			kind := e.Kind
			if kind == "" {
				kind = raylet.EventTask
			}
			ev := TimelineEvent{NodeID: node.String(), WorkerID: worker.String(),
				TaskID: task.String(), Name: e.Name, Start: time.UnixMicro(e.StartUnixUs),
				End: time.UnixMicro(e.EndUnixUs), Failed: e.Failed, Kind: kind, Bytes: e.Bytes, Detail: e.Detail,
				Error: e.Error, RemoteStack: e.RemoteStack}
			if job, err := ids.FromBytes(e.JobId); err == nil && !job.IsZero() {
				ev.JobID = job.String()
			}
			if tid, err := trace.TraceIDFromHex(e.TraceId); err == nil {
				ev.TraceID = tid.String()
			}
			out = append(out, ev)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b TimelineEvent) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// askLiveNodes sends body to subject(node) of every live node the GCS
// lists, all at once, and calls answer with each reply that comes within
// ctx (and 5 s); answer may run concurrently. It returns the nodes it
// asked; those that did not answer are left out.
func askLiveNodes(ctx context.Context, nc *nats.Conn, subject func(ids.NodeID) string, body []byte, answer func(ids.NodeID, *atollpb.NodeInfo, []byte)) ([]ids.NodeID, error) {
	nodes, err := gcs.NewClient(nc, gcs.ClientOptions{}).ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var asked []ids.NodeID
	var wg sync.WaitGroup
	for _, n := range nodes {
		node, err := ids.FromBytes(n.NodeId)
		if n.State != atollpb.NodeState_NODE_ALIVE || err != nil {
			continue
		}
		asked = append(asked, node)
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, timelineTimeout)
			defer cancel()
			msg, err := nc.RequestWithContext(rctx, subject(node), body)
			if err != nil {
				return
			}
			answer(node, n, msg.Data)
		})
	}
	wg.Wait()
	return asked, nil
}
