package runtime

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/specpack"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// Simulation (package sim): the simulator runs whole clusters in one
// process, one goroutine at a time, on a simulated clock, and drives the
// same Runtime as a driver and worker processes do. What it replaces is
// injected here, as a driver's node or a worker's connection is:
//
//   - the transport: the link to the node, the store client, the GCS
//     client and the frees (SimProcess), all of them the simulator's
//     messages;
//   - what would make a run depend on the machine: ids (SimEnv.NewID,
//     counters instead of crypto/rand), the clock (SimEnv.Now), timers
//     (SimEnv.After), goroutines (SimEnv.Go) and context watches
//     (SimEnv.AfterFunc), which the simulator runs in its own order;
//   - waiting: before each select that blocks a caller (a Get, a Wait, a
//     call waiting for room under MaxPendingCalls), the runtime asks the
//     simulator to park the calling goroutine until the select would not
//     block (SimEnv.Park), so that the simulator, not the Go scheduler,
//     decides what runs next;
//   - the garbage collector's drops: a simulated runtime registers no
//     cleanup (when they run depends on the collector), so its refs are
//     dropped by Release, and a pool worker's at the end of each task
//     (SimSweep: every handle the task made or decoded and did not
//     release), as the worker's collection at a task's end does in a
//     worker process; an actor's, and a driver's, live until they are
//     released or their process ends.
//
// Production runtimes have a nil sim and never reach these paths.

// SimEnv is what the simulator provides a simulated process: its clock,
// ids and scheduling.
type SimEnv interface {
	// NewID returns a fresh id (tasks, puts, actors, the job).
	NewID() ids.ID16
	// Now is the process's clock.
	Now() time.Time
	// Park blocks the calling goroutine, a thread of the simulation,
	// until ready reports true (the simulator evaluates it between its
	// steps) or the thread is being killed.
	Park(ready func() bool)
	// After runs f on the simulator's loop after d of simulated time.
	After(d time.Duration, f func())
	// AfterFunc runs f, as a thread of the simulation, once ctx is done
	// (context.AfterFunc's contract); stop cancels it.
	AfterFunc(ctx context.Context, f func()) (stop func() bool)
	// Go runs f as a new thread of the simulation.
	Go(name string, f func())
	// Post runs f on the simulator's loop, after what is running now:
	// the owner actor's mailbox.
	Post(f func())
}

// SimLink is the simulated process's link to its node (see nodeLink).
type SimLink interface {
	SubmitTask(spec *atollpb.TaskSpec)
	CancelTask(id ids.TaskID, nonRecursive bool)
	SetBlocked(id ids.TaskID, blocked bool)
	CallActor(address string, spec *atollpb.TaskSpec)
	KillActor(m *atollpb.KillActor)
	KillWorker(m *atollpb.KillWorker)
	Fetch(ctx context.Context, refs []*atollpb.ObjectRef) error
	SendBorrows(m *atollpb.BorrowReport)
	GeneratorAck(m *atollpb.GeneratorAck)
	// ReportItem reports an item a generator attempt running in this
	// (worker) process yielded, as workerproto.Client.ReportItem.
	ReportItem(res *atollpb.TaskResult) error
	// Free and Revive are the owner's frees, on every node.
	Free(idl []ids.ObjectID)
	Revive(idl []ids.ObjectID)
	// FreeStrays deletes the copies on node only (owner.FreeStrays).
	FreeStrays(node ids.NodeID, idl []ids.ObjectID)
}

// SimStore is the simulated store client (the methods of
// objectstore.Client a runtime uses).
type SimStore interface{ storeAPI }

// SimGCS is the simulated GCS client.
type SimGCS interface{ gcsAPI }

// SimProcess is what makes a simulated process: its ids, settings and
// the simulator's side of everything it reaches.
type SimProcess struct {
	Settings Settings
	WorkerID ids.WorkerID
	NodeID   ids.NodeID
	Env      SimEnv
	Link     SimLink
	Store    SimStore
	GCS      SimGCS
	// Owner configures the process's owner table (its Worker, Node and
	// NewCallerID are set from the above).
	Owner owner.Config
	// Observe, if set, sees each effect of the owner table as the shell
	// applies it (for the simulator's checks).
	Observe func(owner.Effect)
	// OnStop, if set, runs when a simulated driver installed as the
	// process's current runtime (InstallSim) is shut down (atoll.Shutdown):
	// the simulator ends the run there (and stops the runtime, SimStop);
	// its error is Shutdown's.
	OnStop func() error
}

// simState is a simulated runtime's side of the simulation.
type simState struct {
	env  SimEnv
	link SimLink
	// handles are the refs this runtime made or decoded since the last
	// sweep, for SimSweep (pool workers only).
	handles []*Ref
	track   bool
}

// simLink adapts SimLink to nodeLink.
type simLink struct{ l SimLink }

func (s simLink) submitTask(spec *atollpb.TaskSpec)           { s.l.SubmitTask(spec) }
func (s simLink) submitPacked(p *specpack.Spec)               { s.l.SubmitTask(p.Unpack()) }
func (s simLink) cancelTask(id ids.TaskID, nonRecursive bool) { s.l.CancelTask(id, nonRecursive) }
func (s simLink) setBlocked(id ids.TaskID, blocked bool)      { s.l.SetBlocked(id, blocked) }
func (s simLink) callActor(address string, spec *atollpb.TaskSpec) {
	s.l.CallActor(address, spec)
}
func (s simLink) killActor(m *atollpb.KillActor)   { s.l.KillActor(m) }
func (s simLink) killWorker(m *atollpb.KillWorker) { s.l.KillWorker(m) }
func (s simLink) fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	return s.l.Fetch(ctx, refs)
}
func (s simLink) sendBorrows(m *atollpb.BorrowReport)  { s.l.SendBorrows(m) }
func (s simLink) generatorAck(m *atollpb.GeneratorAck) { s.l.GeneratorAck(m) }
func (s simLink) free(idl []ids.ObjectID)              { s.l.Free(idl) }
func (s simLink) revive(idl []ids.ObjectID)            { s.l.Revive(idl) }
func (s simLink) freeStrays(node ids.NodeID, idl []ids.ObjectID) {
	s.l.FreeStrays(node, idl)
}

// newSimRuntime builds the Runtime of a simulated process.
func newSimRuntime(p SimProcess) *Runtime {
	rt := newRuntime(p.Settings, p.NodeID, p.WorkerID)
	rt.sim = &simState{env: p.Env, link: p.Link}
	rt.jobID, rt.putTask = p.Env.NewID(), p.Env.NewID()
	rt.log = p.Settings.Logger
	if rt.log == nil {
		rt.log = slog.New(slog.DiscardHandler)
	}
	tp := p.Settings.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	rt.tracer = telemetry.Tracer(tp)
	link := simLink{p.Link}
	rt.link, rt.frees, rt.store, rt.gcs = link, link, p.Store, p.GCS
	cfg := p.Owner
	cfg.Worker, cfg.Node, cfg.NewCallerID = p.WorkerID, p.NodeID, p.Env.NewID
	rt.startOwner(cfg)
	if observe := p.Observe; observe != nil {
		apply := rt.owner.apply
		rt.owner.apply = func(e owner.Effect) {
			observe(e)
			apply(e)
		}
	}
	return rt
}

// simDriver is the role of a simulated driver: it has no node of its own
// (the simulator is the cluster), so the calls only a Driver answers
// (atolltest's ops, SetReplicas, ClusterAddress) are refused.
type simDriver struct {
	rt     *Runtime
	onStop func() error
}

func (simDriver) refDecoded(*Ref) {}
func (simDriver) driver(op string) (*Driver, error) {
	return nil, errs.Invalidf("%s: not available under simulation (the simulator is the cluster: use its faults)", op)
}
func (d simDriver) stop(context.Context) error {
	if d.onStop != nil {
		return d.onStop() // the simulator stops the runtime (SimStop) as the run ends
	}
	d.rt.SimStop()
	return nil
}

// NewSimDriver returns the runtime of a simulated driver.
func NewSimDriver(p SimProcess) *Runtime {
	rt := newSimRuntime(p)
	rt.role = simDriver{rt: rt, onStop: p.OnStop}
	return rt
}

// InstallSim makes a simulated driver the process's current runtime
// (atoll.Init with a simulation): SDK calls with any context go to it
// until Shutdown, which stops it (SimProcess.OnStop). It fails with
// ErrAlreadyStarted if a runtime runs.
func InstallSim(rt *Runtime) error {
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.cur.Load() != nil {
		return errs.ErrAlreadyStarted
	}
	install(rt)
	return nil
}

// NewSimWorker returns the runtime of a simulated worker process: a pool
// worker's (its handles are swept at each task's end) or an actor's.
func NewSimWorker(p SimProcess, actor bool) *Worker {
	rt := newSimRuntime(p)
	w := &Worker{Runtime: rt, profileStop: func() {}, done: make(chan struct{})}
	rt.role = w
	rt.sim.track = !actor
	rt.owner.dropsDue = w.postBorrowFlush
	return w
}

// WithRuntime returns a context whose SDK calls use rt (the simulator's
// driver: Running prefers a task's runtime, then this one, then the
// process's current one).
func WithRuntime(ctx context.Context, rt *Runtime) context.Context {
	return context.WithValue(ctx, runtimeKey{}, rt)
}

type runtimeKey struct{}

// SimDeliver applies a message to the process's owner, as its owner
// actor does: a task result, an actor event, a borrower's report.
func (rt *Runtime) SimDeliver(m any) { rt.receiveOwner(m) }

// SimGeneratorAck applies an owner's GeneratorAck to the generator
// attempt it names, if it runs in this process (the raylet's ack, as a
// worker process's reader applies it).
func (rt *Runtime) SimGeneratorAck(m *atollpb.GeneratorAck) {
	if task, err := ids.FromBytes(m.TaskId); err == nil {
		rt.gens.ack(task, m.Attempt, m.Consumed, m.Received)
	}
}

// SimHostsActor records that the worker hosts actor id (its standalone
// borrow reports name it).
func (w *Worker) SimHostsActor(id ids.ActorID) { w.hostedActor.Store(&id) }

// SimStop stops a simulated process's runtime: calls fail from now on
// and its owner table closes (its pending tasks fail), returning what it
// owned (its stored objects, its live actors), which its end frees.
func (rt *Runtime) SimStop() (stored []ids.ObjectID, actors []ids.ActorID) {
	rt.closed.Store(true)
	return rt.stopOwner()
}

// SimKill marks a simulated process dead: it ran no shutdown, its calls
// fail from now on, and its owner table is abandoned as it is.
func (rt *Runtime) SimKill() { rt.closed.Store(true) }

// SimOwner runs f on the owner table (for the simulator's checks): it
// must only read.
func (rt *Runtime) SimOwner(f func(*owner.Table)) {
	rt.owner.mu.Lock()
	defer rt.owner.mu.Unlock()
	f(rt.owner.table)
}

// SimAttachedTask returns the task an owner effect's Attach names (a
// Finished or Retried effect of a task this runtime submitted).
func SimAttachedTask(attach any) (ids.TaskID, bool) {
	if a, ok := attach.(*taskAttach); ok {
		return a.task, true
	}
	return ids.TaskID{}, false
}

// NewActorID returns a fresh actor id: a simulator's, else a random one.
func (rt *Runtime) NewActorID() ids.ActorID {
	if rt.sim != nil {
		return rt.sim.env.NewID()
	}
	return ids.NewActorID()
}

// newTaskID returns a fresh task id: a simulator's, else a random one.
func (rt *Runtime) newTaskID() ids.TaskID {
	if rt.sim != nil {
		return rt.sim.env.NewID()
	}
	return ids.NewTaskID()
}

// newPlacementGroupID returns a fresh placement group id: a simulator's,
// else a random one.
func (rt *Runtime) newPlacementGroupID() ids.PlacementGroupID {
	if rt.sim != nil {
		return rt.sim.env.NewID()
	}
	return ids.NewPlacementGroupID()
}

// now is the process's clock.
func (rt *Runtime) now() time.Time {
	if rt.sim != nil {
		return rt.sim.env.Now()
	}
	return time.Now()
}

// park parks the calling goroutine under a simulator until ready; it
// does nothing otherwise (the caller's select blocks).
func (rt *Runtime) park(ready func() bool) {
	if rt.sim != nil {
		rt.sim.env.Park(ready)
	}
}

// afterFunc is context.AfterFunc, or the simulator's.
func (rt *Runtime) afterFunc(ctx context.Context, f func()) (stop func() bool) {
	if rt.sim != nil {
		return rt.sim.env.AfterFunc(ctx, f)
	}
	return context.AfterFunc(ctx, f)
}

// after runs f after d: on a timer's goroutine, or on the simulator's
// loop.
func (rt *Runtime) after(d time.Duration, f func()) {
	if rt.sim != nil {
		rt.sim.env.After(d, f)
		return
	}
	time.AfterFunc(d, f)
}

// simTrack records a handle for SimSweep.
func (rt *Runtime) simTrack(h *Ref) {
	if rt.sim.track {
		rt.sim.handles = append(rt.sim.handles, h)
	}
}

// simSweep drops the handles made or decoded since the last sweep that
// were not released (a pool worker's task ended: the collection a worker
// process runs then would find them unreachable).
func (rt *Runtime) simSweep() {
	var drops []ids.ObjectID
	for _, h := range rt.sim.handles {
		if h.state.released.CompareAndSwap(false, true) {
			drops = append(drops, h.ID())
		}
	}
	rt.sim.handles = rt.sim.handles[:0]
	if len(drops) > 0 && !rt.closed.Load() {
		rt.owner.dropRef(drops...)
	}
}

// isDone reports whether c is closed.
func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
