package raylet

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Environment of a worker process. The raylet starts the user's own
// binary with these set; atoll.Init sees EnvWorker and serves tasks
// instead of returning.
const (
	EnvWorker    = "ATOLL_WORKER"     // "1" in a worker process
	EnvWorkerID  = "ATOLL_WORKER_ID"  // hex worker id
	EnvNodeID    = "ATOLL_NODE_ID"    // hex node id
	EnvArenaSize = "ATOLL_ARENA_SIZE" // bytes of the arena mapped from fd ArenaFD
	// EnvHeapFloor is the worker's heap floor in bytes (package gcfloor;
	// Config.WorkerHeapFloor).
	EnvHeapFloor = "ATOLL_WORKER_HEAP_FLOOR"
	// ArenaFD and ConnFD are the inherited descriptors: the node's arena
	// (a memfd) and the worker's end of its socket pair to the raylet.
	ArenaFD = 3
	ConnFD  = 4
)

// ProcessConfig says how the raylet runs its workers: as processes of
// Binary (the default), or, with InProcess, as worker runtimes on
// goroutines of this process. Both speak the same worker protocol over a
// connection (package workerproto): a socket pair to a process, an
// in-memory pipe to an in-process worker.
type ProcessConfig struct {
	// InProcess, if set, runs each worker in this process instead of
	// starting a process: it is called with the worker's ids and its end
	// of an in-memory connection (workerconn.Pipe), must start a worker
	// runtime serving that end on goroutines of its own and return at
	// once (an error: the worker could not start; the connection is
	// closed). Such a worker shares this process's memory and the node's
	// arena mapping; killing it closes its connection and cancels its
	// tasks' contexts (Go cannot stop a goroutine: a task that ignores
	// its context runs on, its results dropped). Binary, Args, Env,
	// Arena, Output and OutputFor do not apply; Store, GCS, Fetch,
	// Delete, StartTimeout and KillAt do.
	InProcess func(worker ids.WorkerID, node ids.NodeID, conn workerconn.Endpoint) error

	// Binary is the program to start in worker mode; default
	// os.Executable() (the driver's own binary).
	Binary string
	// Args are its arguments (default: the driver's own, os.Args[1:]).
	Args []string
	// Env is added to the worker's environment.
	Env []string
	// Arena is the node's arena file (a memfd), inherited by workers.
	Arena     *os.File
	ArenaSize uint64
	// Store is the object-store actor; workers' store requests are
	// forwarded to it with the worker as client.
	Store *actor.PID
	// GCS answers GCS requests made by workers.
	GCS func(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error)
	// StartTimeout bounds a worker's start until its hello; default 30s.
	StartTimeout time.Duration
	// Output receives the workers' stdout and stderr; default os.Stderr.
	Output io.Writer
	// OutputFor, if set, captures each worker process's stdout and
	// stderr instead of Output (output.go).
	OutputFor OutputFunc
	// PerJobBinary leaves Binary empty when unset: each task's
	// TaskSpec.worker_binary (its driver's binary) runs its worker (a
	// cluster node started without a worker binary).
	PerJobBinary bool
	// BinaryDir holds the read-only copies of jobs' binaries that their
	// workers run (named by SHA-256; each removed when no job uses it);
	// default: a temporary directory removed when the raylet stops.
	BinaryDir string
	// Fetch, in a cluster, pulls objects held on other nodes into this
	// node's store (a worker's FetchObjects request).
	Fetch func(ctx context.Context, refs []*atollpb.ObjectRef) error
	// Delete, if set, replaces sending a worker's DeleteObjects to the
	// store (in a cluster the copies on other nodes go too).
	Delete func(*atollpb.DeleteObjectsRequest)
	// KillAt, if set, is asked at two points of every task attempt and
	// actor call run in a worker whether to kill the worker there (a
	// process: SIGKILL; an in-process worker: its connection closes) (fault injection: package faultplan's kill-worker rules). The
	// death is then handled as any other: the attempt is reported as
	// crashed and retried within its retries, the actor restarted within
	// its restarts. It is called on the raylet's goroutine, an actor
	// host's or a worker connection's reader, so it must not block.
	KillAt func(point KillPoint, spec *atollpb.TaskSpec) bool
}

// KillPoint is a point of a task attempt or actor call run in a worker
// process where ProcessConfig.KillAt may kill the process.
type KillPoint string

// The kill points: before the task is sent to the process (it never
// runs), and once its result is back from the process, before it is
// reported to the owner (the task ran; return objects it put in the
// store stay there, and its retry finds them).
const (
	BeforeExecute KillPoint = "before-execute"
	AfterExecute  KillPoint = "after-execute"
)

func (p *ProcessConfig) withDefaults() (*ProcessConfig, error) {
	c := *p
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.InProcess != nil {
		if c.Store == nil {
			return nil, fmt.Errorf("raylet: ProcessConfig needs Store")
		}
		c.Binary, c.PerJobBinary = "", false
		return &c, nil
	}
	if c.Binary == "" && !c.PerJobBinary {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("raylet: worker binary: %w", err)
		}
		c.Binary = exe
	}
	if c.Args == nil && len(os.Args) > 1 {
		c.Args = os.Args[1:]
	}
	if c.Arena == nil || c.ArenaSize == 0 || c.Store == nil {
		return nil, fmt.Errorf("raylet: ProcessConfig needs Arena, ArenaSize and Store")
	}
	if c.Output == nil {
		c.Output = os.Stderr
	}
	return &c, nil
}
