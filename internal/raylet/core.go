package raylet

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// CoreConfig is what a Core's decisions read: the node's resources and
// the policy's knobs (Config documents each), and its injected
// environment.
type CoreConfig struct {
	NodeID                 ids.NodeID
	Resources              Resources
	NumWorkers, MaxWorkers int
	IdleTimeout            time.Duration
	StoreCapacity          uint64
	ArgsFraction           float64
	Saturation             float64
	PipelineDepth          int
	// Processes: workers are processes (a task needs a worker binary; a
	// process that exits before it registers is restarted after a
	// backoff). Binary is the node's worker binary ("" with goroutine
	// workers, or when each job's own runs its tasks).
	Processes bool
	Binary    string
	// Cluster: the node places tasks among its peers and forwards what
	// it does not run; SpreadThreshold as ClusterConfig's.
	Cluster         bool
	SpreadThreshold float64
	// CheckBinary, if set, vets the worker binary path a task names
	// before the task queues here and returns the program its workers
	// run (trust.go: a content-addressed copy of a job's binary); an
	// error fails the task. A program it returns other than Binary is a
	// job binary: the Core tracks which jobs use it and, once none does,
	// stops its workers and emits ReleaseBinary.
	CheckBinary func(spec *atollpb.TaskSpec, path string) (string, error)
	// NewWorkerID names new workers and actor hosts; default
	// ids.NewWorkerID (scenario tests count instead).
	NewWorkerID func() ids.WorkerID
	// Tracer starts the spans of tasks waiting in the queue; default:
	// no spans.
	Tracer TaskTracer
	// Logger; default: discard.
	Logger *slog.Logger
}

// TaskTracer starts the span of a task's wait in this node's queue. The
// Core adds events to it (a new pending reason) and ends it when the task
// leaves the queue (started, cancelled, spilled back); it never looks
// into it otherwise.
type TaskTracer interface {
	Queued(spec *atollpb.TaskSpec, id ids.TaskID, recalled bool) trace.Span
}

// Core is the raylet's decision state machine: the queues by scheduling
// class, admission, root-task withholding, leases and pipelines, recalls
// and stealing, the worker pool, the hosted actors' bookkeeping and
// cluster placement. Events go in as method calls, each with the current
// time; what the world must do comes out as Effects, in order (Effects).
// It does no I/O, starts no goroutine, reads no clock and creates no
// context; it is not safe for concurrent use. See the package doc.
type Core struct {
	cfg CoreConfig
	now time.Time
	// total is the node's resources now: cfg.Resources less its
	// committed bundles, plus their groups' resources (core_bundles.go).
	total Resources
	// bundles are the placement groups' bundles the node holds;
	// removedGroups the groups it heard were removed.
	bundles       map[bundleKey]*heldBundle
	removedGroups groupSet

	// effects are queued by the events; applied is the batch handed out
	// last (reused once the shell asks for the next). batch and
	// batchApplied are the same for the attempts of Push effects.
	effects, applied    []Effect
	batch, batchApplied []*Assignment
	draining            bool // Drain: new tasks are placed elsewhere
	earlyExits          map[string]int
	avail               Resources
	classes             map[string]*classQueue
	queued              int
	seq                 uint64
	running             map[ids.TaskID]*task
	// holding maps each task this node holds (queued, waiting for a
	// node, running or pipelined, an actor's creation until its host is
	// spawned) to its attempt: a duplicated SubmitTask of an attempt held
	// here is dropped, never run twice. An attempt leaves it with the
	// effect that ends it here (Done, Reply, Forward, SpawnHost).
	holding map[ids.TaskID]int32
	// taken remembers the submissions the node took, by attempt and hop
	// (the last maxTaken): a copy of one (a duplicated SubmitTask, late
	// or not) is dropped even once the attempt left the node (forwarded,
	// or ended here); a task that comes back to the node (spilled back
	// to it) comes with more hops, and is not a copy.
	taken    map[submission]struct{}
	takenLog []submission
	workers  map[ids.WorkerID]*worker
	pool     []*worker // the workers in start order (deterministic walks)
	idle     []ids.WorkerID
	actors   map[ids.ActorID]*hostedActor
	attempts uint64
	// leases numbers the leases granted; leaseRecalls counts the recalls
	// of leases on their way (one at a time).
	leases       uint64
	leaseRecalls int
	// queuedRequests counts the lease requests among the queued.
	queuedRequests int
	stats          Stats
	reaping        bool // a reap timer is armed
	active         []*classQueue
	cands          []Candidate
	open           []*worker
	heldFn         func(ids.ObjectID) bool
	// jobBinaries are the job binaries (CheckBinary's copies) by the
	// nodes of the owners that submitted their tasks (drivers' nodes,
	// and other nodes for nested tasks; this node's own are not
	// counted): when the last of them leaves (NodeGone), the binary's
	// workers stop and its copy is released.
	jobBinaries map[string]*jobBinary
	noSpan      trace.Span

	// Admission: the objects running tasks read (their bytes counted once
	// in argsHeld), and the running root tasks.
	held         map[ids.ObjectID]*heldObject
	argsHeld     uint64
	runningRoots int

	// Cluster placement: the other nodes' latest views, the SPREAD
	// cursor, tasks waiting for a node able to run them, and the peers'
	// totals when the waiting tasks were last placed (they are placed
	// again only when the totals change, not on every view).
	peers     map[ids.NodeID]*NodeView
	spread    uint64
	waiting   []*waitingTask
	totals    map[ids.NodeID]Resources
	replacing bool // waiting tasks are being placed again
}

// task is a task the core knows: queued or running.
type task struct {
	spec      *atollpb.TaskSpec
	id        ids.TaskID
	owner     *actor.PID
	demand    Resources
	queueSpan trace.Span
	blocked   bool
	isActor   bool
	seq       uint64 // arrival order
	class     *classQueue
	root      bool        // no object arguments
	inGroup   bool        // placed in a placement group's bundle
	args      []ArgObject // the objects it reads
	hops      int32       // raylets it went through before this one
	// assigned is the attempt handed to a worker; recalling: a recall of
	// it is on its way; cancelled: a cancel reached the attempt.
	assigned *Assignment
	// binary is the program of the worker that runs it (binaryFor, then
	// CheckBinary's answer).
	binary    string
	recalling bool
	cancelled bool
	// holder, if set, makes this a lease request of that submitter, its
	// number request: it queues as a task of its class does, and starting
	// it grants a worker (core_lease.go).
	holder  any
	request uint64
}

// heldObject is an object read by running tasks.
type heldObject struct {
	size    uint64
	readers int
}

// classQueue holds the queued tasks of one scheduling class, in arrival
// order.
type classQueue struct {
	key    string
	demand Resources
	noSlot bool
	root   bool
	tasks  []*task
	// reason is why the class last had tasks left queued.
	reason PendingReason
}

// worker is a pool worker as the core sees it.
type worker struct {
	id     ids.WorkerID
	binary string // the program its process runs ("" for in-process workers)
	// tasks are the attempts pushed to the worker, in push order: the
	// first runs, the others wait in the process (pipelining).
	tasks []*task
	// lease is what the worker is granted while it has tasks: the
	// resources and root slot of its class, held once however many of
	// the class's tasks run on it one after another.
	lease     *lease
	idleSince time.Time
}

// lease is a worker granted to a scheduling class: for the Core's own
// tasks, or to a holder (a submitter writing its tasks to the worker
// directly, core_lease.go).
type lease struct {
	key    string
	demand Resources
	root   bool
	// holder's lease id; recalling: a RecallLease is on its way;
	// blocked: its running task blocked in Get (its CPU and root slot
	// are lent).
	holder    any
	id        uint64
	recalling bool
	blocked   bool
}

// NewCore returns the core of a node with no worker yet (Start starts
// the pool).
func NewCore(cfg CoreConfig) *Core {
	if cfg.NewWorkerID == nil {
		cfg.NewWorkerID = ids.NewWorkerID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = 1
	}
	c := &Core{
		cfg:     cfg,
		avail:   cfg.Resources.Clone(),
		total:   cfg.Resources.Clone(),
		bundles: map[bundleKey]*heldBundle{},
		classes: map[string]*classQueue{},
		held:    map[ids.ObjectID]*heldObject{},
		running: map[ids.TaskID]*task{},
		holding: map[ids.TaskID]int32{},
		taken:   map[submission]struct{}{},
		workers: map[ids.WorkerID]*worker{},
		actors:  map[ids.ActorID]*hostedActor{},
		peers:   map[ids.NodeID]*NodeView{},
		noSpan:  noop.Span{},
	}
	if c.avail == nil {
		c.avail, c.total = Resources{}, Resources{}
	}
	c.heldFn = func(id ids.ObjectID) bool { return c.held[id] != nil }
	return c
}

// Effects returns the effects of the events since the last call, in the
// order they happened. The slice (and the attempts of its Push effects)
// is reused by the call after next: apply every effect before asking
// again. An effect's application may step the core (it queues more,
// returned by the next call).
func (c *Core) Effects() []Effect {
	out := c.effects
	clear(c.applied)
	c.effects, c.applied = c.applied[:0], out
	clear(c.batchApplied)
	c.batch, c.batchApplied = c.batchApplied[:0], c.batch
	return out
}

func (c *Core) emit(e Effect) {
	switch e := e.(type) {
	case Done:
		c.release(e.Attempt.spec.TaskId, e.Attempt.spec.Attempt)
	case Reply:
		c.release(e.Result.GetTaskId(), e.Result.GetAttempt())
	case Forward:
		c.release(e.Spec.TaskId, e.Spec.Attempt)
	case SpawnHost:
		c.release(e.Spec.TaskId, e.Spec.Attempt)
	}
	c.effects = append(c.effects, e)
}

// holds reports whether the node holds this attempt of task id already
// (a duplicated submission), or, for an actor's creation, hosts its actor.
func (c *Core) holds(id ids.TaskID, spec *atollpb.TaskSpec) bool {
	if a, ok := c.holding[id]; ok && a == spec.Attempt {
		return true
	}
	return spec.Type == atollpb.TaskType_ACTOR_CREATION_TASK && c.actors[ids.MustFromBytes(spec.ActorId)] != nil
}

// submission names one submission of an attempt to this node: the hops
// it took before (0 from its owner).
type submission struct {
	task    ids.TaskID
	attempt int32
	hops    int32
}

// maxTaken bounds the submissions a Core remembers (a copy arrives
// within moments of the original).
const maxTaken = 1 << 14

// took records a submission; false if the node took it already.
func (c *Core) took(s submission) bool {
	if _, ok := c.taken[s]; ok {
		return false
	}
	if len(c.takenLog) == maxTaken {
		delete(c.taken, c.takenLog[0])
		c.takenLog = c.takenLog[1:]
	}
	c.taken[s] = struct{}{}
	c.takenLog = append(c.takenLog, s)
	return true
}

// release forgets that the node holds attempt of task id (raw bytes).
func (c *Core) release(id []byte, attempt int32) {
	tid, err := ids.FromBytes(id)
	if err != nil {
		return
	}
	if a, ok := c.holding[tid]; ok && a == attempt {
		delete(c.holding, tid)
	}
}

// Start starts the pool's prestarted workers (in-process workers, or
// process workers of the node's own binary).
func (c *Core) Start(now time.Time) {
	c.now = now
	if !c.cfg.Processes || c.cfg.Binary != "" {
		for range c.cfg.NumWorkers {
			c.spawnWorker(c.cfg.Binary)
		}
	}
}

// Drain makes the node place every task submitted or forwarded to it
// from now on on another node (see the Drain message). With ifIdle it
// drains only a node that is idle: busy says what keeps it from being
// (queued or running work, actors, placement-group bundles), and the
// node then stays as it was. The check and the switch are one step, so
// no work lands on the node between them.
func (c *Core) Drain(now time.Time, ifIdle bool) (busy string) {
	c.now = now
	if ifIdle && !c.draining {
		if busy = c.busy(); busy != "" {
			c.cfg.Logger.Info("raylet: refused to drain: the node is busy", "busy", busy)
			return busy
		}
	}
	if !c.draining {
		c.draining = true
		c.cfg.Logger.Info("raylet: draining: new tasks go to other nodes")
	}
	return ""
}

// busy says what keeps the node from being idle ("" if nothing).
func (c *Core) busy() string {
	var why []string
	if n := c.queued + len(c.waiting); n > 0 {
		why = append(why, fmt.Sprintf("%d tasks queued", n))
	}
	if n := len(c.running); n > 0 {
		why = append(why, fmt.Sprintf("%d tasks running", n))
	}
	if n := len(c.actors); n > 0 {
		why = append(why, fmt.Sprintf("%d actors", n))
	}
	if n := len(c.bundles); n > 0 {
		why = append(why, fmt.Sprintf("%d placement-group bundles", n))
	}
	return strings.Join(why, ", ")
}

// State is a snapshot of the core.
func (c *Core) State() *State {
	leased := 0
	for _, w := range c.pool {
		if w.leased() {
			leased++
		}
	}
	return &State{
		NodeID: c.cfg.NodeID, Total: c.total.Clone(), Available: c.avail.Clone(), Bundles: c.Bundles(), Demands: c.Demands(),
		Queued: c.queued - c.queuedRequests + len(c.waiting), QueuedCPU: c.queuedCPU(), Running: len(c.running), Workers: len(c.workers), IdleWorkers: len(c.idle),
		Actors: len(c.actors), Leased: leased, LeaseRequests: c.queuedRequests, Draining: c.draining, Stats: c.stats,
	}
}

// HeldAttempt reports the attempt of task id this node holds, if any:
// queued, waiting for a node able to run it, or assigned to a worker
// (running or pipelined; worker names it, zero otherwise). It walks the
// queues (O(queued)): for harnesses and checks that ask where work is,
// not for the hot path.
func (c *Core) HeldAttempt(id ids.TaskID) (attempt int32, worker ids.WorkerID, ok bool) {
	if t := c.running[id]; t != nil {
		return t.spec.Attempt, t.assigned.worker, true
	}
	for _, cq := range c.classes {
		for _, t := range cq.tasks {
			if t.id == id {
				return t.spec.Attempt, ids.WorkerID{}, true
			}
		}
	}
	for _, w := range c.waiting {
		if w.t.id == id {
			return w.t.spec.Attempt, ids.WorkerID{}, true
		}
	}
	return 0, ids.WorkerID{}, false
}

// binaryFor is the program that runs spec: the node's worker binary if it
// has one, else the submitting driver's ("" with in-process workers).
func (c *Core) binaryFor(spec *atollpb.TaskSpec) string {
	if !c.cfg.Processes {
		return ""
	}
	if c.cfg.Binary != "" {
		return c.cfg.Binary
	}
	return spec.WorkerBinary
}

// startSpan starts t's queue span (a lease request has none: its tasks
// wait in their submitter's queue, which makes their spans).
func (c *Core) startSpan(t *task, recalled bool) {
	if c.cfg.Tracer == nil || t.holder != nil {
		t.queueSpan = c.noSpan
		return
	}
	t.queueSpan = c.cfg.Tracer.Queued(t.spec, t.id, recalled)
}
