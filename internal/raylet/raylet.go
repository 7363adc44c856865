package raylet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// task is a task the raylet knows: queued or running.
type task struct {
	spec      *atollpb.TaskSpec
	id        ids.TaskID
	owner     *actor.PID
	demand    Resources
	queueSpan trace.Span
	worker    ids.WorkerID
	cancel    context.CancelCauseFunc // cancels the attempt's context (runCtx)
	blocked   bool
	isActor   bool
	enqueued  time.Time
	started   time.Time
	attemptID uint64
	seq       uint64 // arrival order
	class     *classQueue
	root      bool        // no object arguments
	args      []ArgObject // the objects it reads
	hops      int32       // raylets it went through before this one
	// assigned is the attempt handed to a worker; recalling: a recall of
	// it is on its way.
	assigned  *Assignment
	recalling bool
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

type worker struct {
	id     ids.WorkerID
	binary string // the program its process runs ("" for goroutine workers)
	pid    *actor.PID
	slot   *Slot
	// tasks are the attempts pushed to the worker, in push order: the
	// first runs, the others wait in the process (pipelining).
	tasks []*task
	// lease is what the worker is granted while it has tasks: the
	// resources and root slot of its class, held once however many of
	// the class's tasks run on it one after another.
	lease     *lease
	idleSince time.Time
}

// lease is a worker granted to a scheduling class.
type lease struct {
	key    string
	demand Resources
	root   bool
}

// raylet is the node manager actor. All fields are owned by its goroutine.
type raylet struct {
	cfg      Config
	draining bool // Drain: new tasks are placed on other nodes
	// earlyExits counts, per binary, the worker processes in a row that
	// exited before registering (reset by one that ran a task).
	earlyExits map[string]int
	tracer     trace.Tracer
	avail      Resources
	classes    map[string]*classQueue
	queued     int
	seq        uint64
	running    map[ids.TaskID]*task
	workers    map[ids.WorkerID]*worker
	idle       []ids.WorkerID
	actors     map[ids.ActorID]*hostedActor
	byPID      map[string]ids.ActorID
	strategy   *actorStrategy
	attempts   uint64
	stats      Stats
	reaping    bool // a reapIdle tick is scheduled
	// Admission: the objects running tasks read (their bytes counted once
	// in argsHeld), and the running root tasks.
	held         map[ids.ObjectID]*heldObject
	argsHeld     uint64
	runningRoots int
	// Cluster placement: the other nodes' latest views, the SPREAD
	// cursor, tasks waiting for a node able to run them, and the worker
	// configurations per job binary.
	peers   map[ids.NodeID]*NodeView
	spread  uint64
	waiting []*waitingTask
	// totals are the peers' total resources when the waiting tasks were
	// last placed: they wait for a node whose total fits them, so they
	// are placed again only when the totals change, not on every view.
	totals map[ids.NodeID]Resources
	// timeline remembers the last finished task attempts.
	timeline timeline
	// replacing is set while waiting tasks are placed again.
	replacing bool
	procCfgs  map[string]*ProcessConfig
	// binaries are the per-job worker binaries hashed so far (trust.go).
	binaries map[string]binaryStamp
	// deliver gives a result to its owner: through Config.Deliver if the
	// owner lives in this process, else its mailbox. Safe on any goroutine.
	deliver func(owner *actor.PID, res *atollpb.TaskResult)
}

// NewProps returns the props of a raylet actor. The raylet supervises its
// workers and the actors it hosts.
func NewProps(cfg Config) (*actor.Props, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	strategy := newActorStrategy()
	return actor.PropsFromProducer(func() actor.Actor {
		return &raylet{
			cfg:      cfg,
			tracer:   telemetry.Tracer(cfg.TracerProvider),
			avail:    cfg.Resources.Clone(),
			classes:  map[string]*classQueue{},
			held:     map[ids.ObjectID]*heldObject{},
			running:  map[ids.TaskID]*task{},
			workers:  map[ids.WorkerID]*worker{},
			actors:   map[ids.ActorID]*hostedActor{},
			byPID:    map[string]ids.ActorID{},
			strategy: strategy,
			peers:    map[ids.NodeID]*NodeView{},
			procCfgs: map[string]*ProcessConfig{},
			timeline: timeline{cap: cfg.TimelineCap, observe: cfg.OnTaskEvent},
		}
	}, actor.WithSupervisor(strategy), actor.WithDispatcher(actors.HotDispatcher)), nil
}

// Receive implements actor.Actor.
func (r *raylet) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.strategy.setRaylet(ctx.Self())
		system, local := ctx.ActorSystem(), r.cfg.Deliver
		r.deliver = func(owner *actor.PID, res *atollpb.TaskResult) {
			if owner != nil && (local == nil || !local(owner, res)) {
				system.Root.Send(owner, res)
			}
		}
		if r.cfg.Process == nil || r.cfg.Process.Binary != "" {
			for range r.cfg.NumWorkers {
				r.spawnWorker(ctx, r.defaultBinary())
			}
		}
	case *atollpb.SubmitTask:
		r.submit(ctx, m, ctx.Sender())
	case *PeerView:
		r.peerView(ctx, m)
	case *ForwardCall:
		r.forwardCall(ctx, m)
	case *taskFinished:
		r.finished(ctx, m)
	case *recalled:
		r.takeBack(ctx, m)
	case *atollpb.CancelTask:
		r.cancelTask(ctx, ids.MustFromBytes(m.TaskId), m)
	case *atollpb.GeneratorAck:
		r.generatorAck(m, 0)
	case *atollpb.ForwardGeneratorAck:
		r.generatorAck(m.Ack, m.Hops)
	case *atollpb.BorrowReport:
		r.routeBorrowReport(ctx, m)
	case *atollpb.WorkerBlocked:
		r.setBlocked(ctx, ids.MustFromBytes(m.TaskId), true)
	case *atollpb.WorkerUnblocked:
		r.setBlocked(ctx, ids.MustFromBytes(m.TaskId), false)
	case *atollpb.KillWorker:
		r.killWorker(ctx, m)
	case *WorkerExited:
		if w := r.workers[m.ID]; w != nil {
			r.workerGone(ctx, w, m.Reason)
		}
	case *atollpb.ActorInfo:
		// Actor state changes, for callers inside worker processes.
		for _, w := range r.workers {
			ctx.Send(w.pid, m)
		}
		for _, a := range r.actors {
			ctx.Send(a.pid, m)
		}
	case *atollpb.KillActor:
		r.killActor(ctx, m, false)
	case *KillHostedActor:
		r.killActor(ctx, m.Msg, true)
	case *NodeGone:
		r.ownerNodeGone(ctx, m.Node)
	case *Drain:
		if !r.draining {
			r.draining = true
			r.cfg.Logger.Info("raylet: draining: new tasks go to other nodes")
		}
	case *ActorStarted:
		r.actorStarted(ctx, m)
	case *actorFailed:
		r.actorFailed(m)
	case *actor.Terminated:
		r.childTerminated(ctx, m.Who)
	case *GetState:
		ctx.Respond(r.snapshot())
	case *GetTimeline:
		ctx.Respond(r.timeline.snapshot())
	case *AddTimelineEvent:
		r.timeline.add(m.Event)
	case *reapIdle:
		r.reaping = false
		r.reap(ctx)
	case *respawn:
		if len(r.workers) < r.cfg.NumWorkers {
			r.spawnWorker(ctx, m.binary)
			r.schedule(ctx)
		}
	}
}

func (r *raylet) submit(ctx actor.Context, m *atollpb.SubmitTask, owner *actor.PID) {
	spec := m.Spec
	t := &task{
		spec:     spec,
		id:       ids.MustFromBytes(spec.TaskId),
		owner:    owner,
		demand:   Resources(spec.Resources),
		isActor:  spec.Type == atollpb.TaskType_ACTOR_CREATION_TASK,
		enqueued: time.Now(),
		hops:     m.Hops,
	}
	if t.demand == nil {
		t.demand = Resources{}
	}
	t.root = !t.isActor && spec.NumDependencies == 0
	if !t.isActor { // a constructor's arguments are not held while it lives
		for _, a := range spec.Args {
			if ref := a.GetRef(); ref != nil {
				t.args = append(t.args, ArgObject{ID: ids.MustObjectID(ref.ObjectId), Size: ref.Size})
			}
		}
		for _, b := range spec.Borrowed { // refs inside argument values
			if st := b.GetValue().GetStored(); st != nil {
				t.args = append(t.args, ArgObject{ID: ids.MustObjectID(b.ObjectId), Size: st.Length})
			}
		}
	}
	if r.cfg.Process != nil && r.binaryFor(spec) == "" {
		err := errs.Invalidf("task %s: node %s was started without a worker binary and the task names none", spec.Name, r.cfg.NodeID.Short())
		r.reply(ctx, owner, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(err)})
		return
	}
	if r.cfg.Cluster != nil && !r.placeLocally(ctx, t, m.Forwarded, m.Hops) {
		return // forwarded, waiting for a node, or failed
	}
	r.enqueue(ctx, t)
}

// enqueue queues a task placed on this node.
func (r *raylet) enqueue(ctx actor.Context, t *task) {
	spec, owner := t.spec, t.owner
	if err := r.checkBinary(spec, r.binaryFor(spec)); err != nil {
		r.cfg.Logger.Warn("raylet: refused a task's worker binary", "task", spec.Name, "err", err)
		r.reply(ctx, owner, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(err)})
		return
	}
	if !Feasible(r.cfg.Resources, t.demand) {
		err := errs.Invalidf("task %s demands %v but node %s has %v in all", spec.Name, t.demand, r.cfg.NodeID.Short(), r.cfg.Resources)
		r.reply(ctx, owner, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(err)})
		return
	}
	_, t.queueSpan = r.tracer.Start(telemetry.Extract(context.Background(), spec.Trace), "queue "+spec.Name,
		trace.WithAttributes(attribute.String("atoll.task_id", t.id.String()), attribute.Int("atoll.attempt", int(spec.Attempt))))
	key := ClassKey(t.demand, t.isActor, t.root)
	cq := r.classes[key]
	if cq == nil {
		cq = &classQueue{key: key, demand: t.demand, noSlot: t.isActor, root: t.root}
		r.classes[key] = cq
	}
	r.seq++
	t.seq, t.class = r.seq, cq
	cq.tasks = append(cq.tasks, t)
	r.queued++
	r.stats.Submitted++
	r.schedule(ctx)
}

// schedule dispatches every queued task the policy allows.
func (r *raylet) schedule(ctx actor.Context) {
	if r.queued == 0 {
		return
	}
	active := make([]*classQueue, 0, len(r.classes))
	for _, cq := range r.classes {
		if len(cq.tasks) > 0 {
			active = append(active, cq)
		}
	}
	slices.SortFunc(active, func(a, b *classQueue) int { return cmp.Compare(a.tasks[0].seq, b.tasks[0].seq) })
	lim := r.limits()
	cands := make([]Candidate, len(active))
	for i, cq := range active {
		cands[i] = Candidate{Demand: cq.demand, NoSlot: cq.noSlot, Root: cq.root, Count: len(cq.tasks)}
		if cq.root {
			continue // root tasks have no object arguments to list
		}
		// Only the tasks that could start need their arguments listed:
		// listing every queued task would cost O(queue) per decision (one
		// spare covers rounding of fractional demands).
		n := min(r.avail.Times(cq.demand, len(cq.tasks))+1, len(cq.tasks))
		if !cq.noSlot {
			n = min(n, max(lim.FreeSlots, 0))
		}
		cands[i].Args = make([][]ArgObject, n)
		for j, t := range cq.tasks[:n] {
			cands[i].Args[j] = t.args
		}
	}
	dispatch, reasons := Pick(cands, r.avail, lim)
	for i, cq := range active {
		n := dispatch[i]
		for _, t := range cq.tasks[:n] {
			r.dispatch(ctx, t)
		}
		clear(cq.tasks[:n])
		cq.tasks = cq.tasks[n:]
		r.queued -= n
		if len(cq.tasks) == 0 {
			delete(r.classes, cq.key) // classes come and go with their tasks
		} else if reasons[i] != cq.reason {
			cq.reason = reasons[i]
			cq.tasks[0].queueSpan.AddEvent("pending", trace.WithAttributes(attribute.String("atoll.pending_reason", string(cq.reason))))
		}
	}
	r.fillPipelines(ctx)
	r.recallForOthers(ctx)
}

// withMiddleware installs Config.Middleware on props of a child.
func (r *raylet) withMiddleware(props *actor.Props) *actor.Props {
	if len(r.cfg.Middleware) == 0 {
		return props
	}
	return props.Clone(actor.WithReceiverMiddleware(r.cfg.Middleware...))
}

// argsCap is the most argument bytes running tasks may hold.
func (r *raylet) argsCap() uint64 { return uint64(r.cfg.ArgsFraction * float64(r.cfg.StoreCapacity)) }

// limits are the admission limits now.
func (r *raylet) limits() Limits {
	lim := Limits{
		FreeSlots: len(r.idle) + r.cfg.MaxWorkers - len(r.workers),
		RootSlots: -1,
		ArgsHeld:  r.argsHeld,
		ArgsCap:   r.argsCap(),
		Held:      func(id ids.ObjectID) bool { return r.held[id] != nil },
	}
	if slots := RootSlots(r.cfg.Saturation, r.cfg.NumWorkers); slots >= 0 {
		lim.RootSlots = max(0, slots-r.runningRoots)
	}
	return lim
}

// dispatch starts t, which the policy let through: it takes the class's
// resources, and a worker leased to the class (or an actor host).
func (r *raylet) dispatch(ctx actor.Context, t *task) {
	r.avail.Sub(t.demand)
	if t.root {
		r.runningRoots++
	}
	if t.isActor {
		r.hold(t)
		r.dequeued(t)
		r.stats.Dispatched++
		r.startActor(ctx, t)
		return
	}
	w := r.takeIdle(ctx, r.binaryFor(t.spec))
	w.lease = &lease{key: t.class.key, demand: t.demand, root: t.root}
	r.assign(ctx, w, t)
}

// hold counts the objects t reads as held by running tasks (admission).
func (r *raylet) hold(t *task) {
	before, more := r.argsHeld, uint64(0)
	for _, a := range t.args {
		h := r.held[a.ID]
		if h == nil {
			h = &heldObject{size: a.Size}
			r.held[a.ID] = h
			r.argsHeld += a.Size
			more += a.Size
		}
		h.readers++
	}
	r.checkAdmission(before, more)
}

// admits reports whether the objects t reads fit under the admission cap
// next to those running tasks hold (the rule Pick applies).
func (r *raylet) admits(t *task) bool {
	limit := r.argsCap()
	if limit == 0 || r.argsHeld == 0 {
		return true
	}
	more := uint64(0)
	for i, a := range t.args {
		if r.held[a.ID] != nil || slices.ContainsFunc(t.args[:i], func(b ArgObject) bool { return b.ID == a.ID }) {
			continue
		}
		more += a.Size
	}
	return more == 0 || r.argsHeld+more <= limit
}

// dequeued ends t's queue span: it waited for the reason its class was
// last held back for (a class is forgotten when it empties).
func (r *raylet) dequeued(t *task) {
	reason := "none"
	if t.class.reason != PendingNone {
		reason = string(t.class.reason)
	}
	t.queueSpan.SetAttributes(attribute.String("atoll.pending_reason", reason))
	t.queueSpan.End()
	t.started = time.Now()
}

// assign pushes ts to w, which is leased to their class, in one write:
// the first of the worker's tasks runs at once, a later one (pipelined)
// when those before it end.
func (r *raylet) assign(ctx actor.Context, w *worker, ts ...*task) {
	batch := make([]*Assignment, 0, len(ts))
	for _, t := range ts {
		batch = append(batch, r.prepare(w, t))
	}
	r.push(ctx, w, batch)
}

// prepare records t as assigned to w (its arguments held from now on) and
// returns its attempt.
func (r *raylet) prepare(w *worker, t *task) *Assignment {
	r.hold(t)
	r.dequeued(t)
	r.stats.Dispatched++
	_, sched := r.tracer.Start(telemetry.Extract(context.Background(), t.spec.Trace), "schedule "+t.spec.Name,
		trace.WithAttributes(attribute.String("atoll.task_id", t.id.String()),
			attribute.String("atoll.worker_id", w.id.String()), attribute.String("atoll.node_id", r.cfg.NodeID.String()),
			attribute.Int("atoll.pipelined", len(w.tasks))))
	sched.End()
	runCtx, cancel := context.WithCancelCause(context.Background())
	r.attempts++
	t.cancel, t.worker, t.attemptID = cancel, w.id, r.attempts
	w.tasks = append(w.tasks, t)
	r.running[t.id] = t
	t.assigned = &Assignment{ctx: runCtx, spec: t.spec, attemptID: t.attemptID, worker: w.id, owner: t.owner, deliver: r.deliver}
	return t.assigned
}

// push hands prepared attempts to w's slot.
func (r *raylet) push(ctx actor.Context, w *worker, batch []*Assignment) {
	w.slot.assign(batch...)
	if r.cfg.Process == nil {
		for _, a := range batch {
			ctx.Send(w.pid, a) // a goroutine worker starts it
		}
	}
}

func (r *raylet) finished(ctx actor.Context, m *taskFinished) {
	w := r.workers[m.worker]
	if w == nil {
		return // a killed worker's late result: already reported as a crash
	}
	i := slices.IndexFunc(w.tasks, func(t *task) bool { return t.attemptID == m.attemptID })
	if i < 0 {
		return
	}
	t := w.tasks[i]
	w.tasks = slices.Delete(w.tasks, i, i+1)
	r.releaseTask(t)
	delete(r.running, t.id)
	r.stats.Finished++
	r.timeline.add(finishedEvent(t, w.id, m.result.GetError() != nil))
	if !m.delivered {
		r.reply(ctx, t.owner, m.result)
	}
	if len(w.tasks) == 0 {
		r.leaseEnded(ctx, w)
		r.schedule(ctx)
		r.steal(ctx)
		return
	}
	if i == 0 {
		w.tasks[0].started = time.Now() // the next one starts
	}
	r.schedule(ctx)
}

// releaseTask gives back what a task attempt held by itself: its context,
// the objects it read, and the CPU it lent while blocked (the lease's
// resources stay with the worker until its last task ends).
func (r *raylet) releaseTask(t *task) {
	t.cancel(nil)
	for _, a := range t.args {
		if h := r.held[a.ID]; h != nil {
			if h.readers--; h.readers == 0 {
				delete(r.held, a.ID)
				r.argsHeld -= h.size
			}
		}
	}
	if t.blocked {
		t.blocked = false
		r.avail[CPU] -= t.demand[CPU]
		if t.root {
			r.runningRoots++
		}
	}
}

func (r *raylet) reply(ctx actor.Context, owner *actor.PID, res *atollpb.TaskResult) {
	if owner != nil {
		ctx.Send(owner, res)
	}
}

// cancelTask cancels task id where this node holds it: queued, running
// or waiting for a node, else (unless m names one attempt) where it was
// forwarded. With m.OneAttempt, only that attempt.
func (r *raylet) cancelTask(ctx actor.Context, id ids.TaskID, m *atollpb.CancelTask) {
	other := func(t *task) bool { return m.OneAttempt && t.spec.Attempt != m.Attempt }
	for _, cq := range r.classes {
		for i, t := range cq.tasks {
			if t.id != id || other(t) {
				continue
			}
			cq.tasks = append(cq.tasks[:i], cq.tasks[i+1:]...)
			r.queued--
			if len(cq.tasks) == 0 {
				delete(r.classes, cq.key)
			}
			t.queueSpan.SetAttributes(attribute.String("atoll.pending_reason", "cancelled"))
			t.queueSpan.End()
			err := &errs.CancelledError{TaskName: t.spec.Name, TaskID: id.String()}
			r.reply(ctx, t.owner, &atollpb.TaskResult{TaskId: t.spec.TaskId, Attempt: t.spec.Attempt, Error: errs.ToProto(err)})
			return
		}
	}
	if t := r.running[id]; t != nil {
		if !other(t) {
			t.cancel(errs.CancelCause(m.NonRecursive)) // the executor reports the task cancelled
		}
		return
	}
	if r.cancelWaiting(ctx, id, other) || m.OneAttempt {
		return
	}
	if r.cfg.Cluster != nil {
		r.cfg.Cluster.Cancel(id, m.NonRecursive) // it may have been forwarded to another node
	}
}

func (r *raylet) setBlocked(ctx actor.Context, id ids.TaskID, blocked bool) {
	t := r.running[id]
	if t == nil || t.blocked == blocked {
		return
	}
	t.blocked = blocked
	// A task waiting for its children lends its CPU and, if it is a root
	// task, its root slot: otherwise nested tasks could never start.
	if blocked {
		r.avail[CPU] += t.demand[CPU]
		if t.root {
			r.runningRoots--
		}
		// Its followers must not wait behind it (one may be the very
		// task it waits for).
		if w := r.workers[t.worker]; w != nil {
			r.recallFollowers(ctx, w)
		}
		r.schedule(ctx)
	} else {
		r.avail[CPU] -= t.demand[CPU]
		if t.root {
			r.runningRoots++
		}
	}
}

func (r *raylet) killWorker(ctx actor.Context, m *atollpb.KillWorker) {
	var w *worker
	if len(m.TaskId) > 0 {
		if t := r.running[ids.MustFromBytes(m.TaskId)]; t != nil {
			w = r.workers[t.worker]
		}
	} else {
		id := ids.MustFromBytes(m.WorkerId)
		w = r.workers[id]
		for _, a := range r.actors {
			if a.worker == id {
				r.crashActor(ctx, a, m.Reason)
				return
			}
		}
	}
	if w == nil {
		return
	}
	reason := m.Reason
	if reason == "" {
		reason = "worker killed"
	}
	r.stats.WorkersKilled++
	r.workerGone(ctx, w, reason)
}

func (r *raylet) childTerminated(ctx actor.Context, who *actor.PID) {
	if id, ok := r.byPID[who.Id]; ok {
		r.actorTerminated(ctx, id)
	}
}

// GetState asks a raylet for a snapshot of its state (for status and tests).
type GetState struct{}

// Stats counts what a raylet did.
type Stats struct {
	Submitted, Dispatched, Finished, WorkersKilled, WorkersReaped, ActorRestarts uint64
	// WorkersFailedEarly counts worker processes that exited before they
	// registered (each restarted after a backoff).
	WorkersFailedEarly uint64
	// Forwarded counts tasks placed on other nodes; SpilledBack those of
	// them that had queued here first.
	Forwarded, SpilledBack uint64
	// Recalls counts recalls of pipelined attempts asked of workers,
	// Recalled those given back unstarted.
	Recalls, Recalled uint64
}

// State is a snapshot of a raylet.
type State struct {
	NodeID      ids.NodeID
	Total       Resources
	Available   Resources
	Queued      int
	QueuedCPU   float64
	Running     int
	Workers     int
	IdleWorkers int
	Actors      int
	Draining    bool
	Stats       Stats
}

func (r *raylet) snapshot() *State {
	return &State{
		NodeID: r.cfg.NodeID, Total: r.cfg.Resources.Clone(), Available: r.avail.Clone(),
		Queued: r.queued + len(r.waiting), QueuedCPU: r.queuedCPU(), Running: len(r.running), Workers: len(r.workers), IdleWorkers: len(r.idle),
		Actors: len(r.actors), Draining: r.draining, Stats: r.stats,
	}
}

// String renders the state for logs.
func (s *State) String() string {
	return fmt.Sprintf("node %s: %d queued, %d running, %d/%d workers idle, %d actors, available %v of %v",
		s.NodeID.Short(), s.Queued, s.Running, s.IdleWorkers, s.Workers, s.Actors, s.Available, s.Total)
}
