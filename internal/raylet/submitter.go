package raylet

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/outbox"
	"github.com/atoll-runtime/atoll/internal/slab"
	"github.com/atoll-runtime/atoll/internal/specpack"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Submitter submits one owner's leasable tasks straight to workers the
// raylet leases to it (direct submission): the shell of a SubmitCore,
// living in the raylet's process next to the workers' connections. The
// owner hands it each task (Submit) instead of a SubmitTask message; it
// writes the task's push frame to the connection of a worker leased to
// the task's class, and the connection's reader hands the result back to
// it (Slot.Finish, Assignment.Report), which delivers it to the owner on
// that goroutine. The raylet's actor is told only of leases (requests,
// returns); their use (counters and timeline events: leaseUse) waits in
// the submitter until the raylet reads its state or timeline (it takes
// it then: takeUse), a lease ends, or EventBatchSize events are waiting. No
// message per task or per burst: a synchronous task wakes no actor.
//
// Its core is stepped under mu by whoever has an event (the owner's
// goroutine submitting, a connection's reader with a result, the raylet's
// goroutine granting or recalling a lease, a recall's goroutine, the
// timer); its effects are queued and applied outside mu, one drainer at
// a time, in order, as the owner shell does. A drainer that may not wait
// on a worker (a reader, the raylet's goroutine) queues its writes
// (Conn.Queue); the owner's goroutine writes them itself.
//
// Exactly once: an attempt it pushed is either taken by the slot's
// Finish (its result), by takeLease when the worker died (reported
// crashed here), or refused by the slot as it is pushed (the lease ended:
// reported crashed by the pusher).
type Submitter struct {
	cfg SubmitterConfig

	mu     sync.Mutex
	core   *SubmitCore
	outbox outbox.Outbox[SubmitEffect] // under mu
	// slots are the slots of the leases the core holds.
	slots map[uint64]*Slot
	// enc encodes push frames (the drainer's); lastKey is keyOf's.
	enc     PushEncoder
	lastKey keyCache
	// pushing is push's list of assignments (the drainer's), kept for
	// the next push: a push of one task allocates none.
	pushing []*Assignment
	// tasks (under mu) and assignments (the drainer's) make the queued
	// tasks and their assignments a run at a time: each lives from its
	// submission or push to its result, close to its run-mates'.
	tasks       slab.Of[DirectTask]
	assignments slab.Of[Assignment]

	// useMu guards use and events, the use not yet reported.
	useMu  sync.Mutex
	use    leaseUse
	events EventBatch
}

// SubmitterConfig is what a Submitter submits for and with.
type SubmitterConfig struct {
	// System and Raylet reach the raylet's actor (lease requests,
	// returns, use reports).
	System *actor.ActorSystem
	Raylet *actor.PID
	// Deliver hands a result to the tasks' owner, on the goroutine that
	// has it (a connection's reader, or a submitting goroutine for a
	// task that failed before it went out); it must not block.
	Deliver func(*atollpb.TaskResult)
	// Tracer makes the queue and schedule spans of traced tasks.
	Tracer trace.Tracer
	// NodeID names the node in spans.
	NodeID ids.NodeID
	// Core configures the SubmitCore (pipeline depth, linger).
	Core SubmitConfig
	// Lone, if set, is the owner's claim on a paused connection (lazy
	// reading): a task pushed alone to an idle lease leaves the worker's
	// connection reader paused and is held there for the owner's Get to
	// read its result (Slot.pushDirect). Nil: readers never pause.
	Lone *workerconn.Lone
}

// NewSubmitter returns a submitter for one owner of the raylet cfg.Raylet.
func NewSubmitter(cfg SubmitterConfig) *Submitter {
	return &Submitter{cfg: cfg, core: NewSubmitCore(cfg.Core), slots: map[uint64]*Slot{}}
}

// Submit takes spec if it is leasable (Leasable) and reports whether it
// did; the caller submits it to the raylet otherwise.
func (s *Submitter) Submit(spec *atollpb.TaskSpec) bool {
	if !Leasable(spec) {
		return false
	}
	if _, err := ids.FromBytes(spec.TaskId); err != nil {
		return false
	}
	s.step(true, func(c *SubmitCore) {
		t := s.tasks.New()
		t.Spec = spec // its Assignment is made when it is pushed
		c.Submit(time.Now(), s.keyOf(spec), t)
	})
	return true
}

// SubmitPacked takes a packed spec (specpack.Leasable, as its owner
// checked before packing it) and reports whether it did; the caller
// submits it, unpacked, to the raylet otherwise.
func (s *Submitter) SubmitPacked(p *specpack.Spec) bool {
	if _, err := ids.FromBytes(p.TaskID()); err != nil {
		return false
	}
	s.step(true, func(c *SubmitCore) {
		t := s.tasks.New()
		t.Packed = p
		c.Submit(time.Now(), s.keyOf(p.Shape()), t)
	})
	return true
}

// keyOf is LeaseKey(spec), remembered for the last class of one resource
// (a task's demand is a fresh map each time: most tasks of a program
// share one); mu is held.
func (s *Submitter) keyOf(spec *atollpb.TaskSpec) string {
	if len(spec.Resources) != 1 {
		return LeaseKey(spec)
	}
	for k, v := range spec.Resources {
		if c := &s.lastKey; c.key != "" && c.resource == k && c.amount == v && c.binary == spec.WorkerBinary {
			return c.key
		}
		s.lastKey = keyCache{resource: k, amount: v, binary: spec.WorkerBinary, key: LeaseKey(spec)}
	}
	return s.lastKey.key
}

// keyCache is the last single-resource class's key.
type keyCache struct {
	resource, binary, key string
	amount                float64
}

// Cancel cancels the task with id if the submitter holds it and reports
// whether it did.
func (s *Submitter) Cancel(id ids.TaskID, nonRecursive bool) bool {
	held := false
	s.step(true, func(c *SubmitCore) { held = c.Cancel(time.Now(), id, nonRecursive) })
	return held
}

// WorkerOf returns the worker running (or holding) the task with id, if
// the submitter pushed it there.
func (s *Submitter) WorkerOf(id ids.TaskID) (ids.WorkerID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.core.Holds(id)
	if t == nil || t.lease == nil {
		return ids.WorkerID{}, false
	}
	return t.lease.worker, true
}

// Stats counts what the submitter holds.
func (s *Submitter) Stats() SubmitStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Stats()
}

// step applies f to the core, then drains the effects unless another
// goroutine is draining (it applies them, in order). wait: this goroutine
// may wait on a worker's connection.
func (s *Submitter) step(wait bool, f func(*SubmitCore)) {
	s.mu.Lock()
	f(s.core)
	s.core.Compact()
	if s.core.HasEffects() {
		s.outbox.AddFrom(s.core.AppendEffects)
	}
	s.outbox.Drain(&s.mu, func(e SubmitEffect) { s.apply(e, wait) })
}

// apply carries out one effect (outside mu, by the drainer).
func (s *Submitter) apply(e SubmitEffect, wait bool) {
	root := s.cfg.System.Root
	switch e := e.(type) {
	case *PushDirect:
		s.push(e, wait)
	case AskLease:
		root.Send(s.cfg.Raylet, &leaseRequest{holder: s, req: e.Request, spec: e.Spec})
	case DropLeaseRequest:
		root.Send(s.cfg.Raylet, &leaseCancel{holder: s, req: e.Request})
	case GiveBack:
		s.mu.Lock()
		slot := s.slots[e.Lease]
		delete(s.slots, e.Lease)
		s.mu.Unlock()
		if slot != nil {
			slot.endLease(e.Lease)
		}
		s.flushUse()
		root.Send(s.cfg.Raylet, &leaseReturn{worker: e.Worker, lease: e.Lease})
	case RecallDirect:
		s.recall(e)
	case CancelDirect:
		if slot := s.slotOf(e.Lease); slot != nil {
			slot.queue(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{
				TaskId: e.Task.ID().Bytes(), NonRecursive: e.NonRecursive}}})
		}
	case FailDirect:
		err := e.Err
		if e.Cancelled {
			err = errs.ToProto(&errs.CancelledError{TaskName: e.Task.Common().Name, TaskID: e.Task.ID().String()})
		}
		s.endSpans(e.Task, "cancelled")
		s.cfg.Deliver(&atollpb.TaskResult{TaskId: e.Task.ID().Bytes(), Attempt: e.Task.Attempt(), Error: err})
	case ArmSubmitTimer:
		time.AfterFunc(e.After, func() { s.step(false, func(c *SubmitCore) { c.Tick(time.Now()) }) })
	}
}

func (s *Submitter) slotOf(lease uint64) *Slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots[lease]
}

// push writes a PushDirect's tasks to its lease's worker.
func (s *Submitter) push(e *PushDirect, wait bool) {
	slot := s.slotOf(e.Lease)
	now := time.Now()
	as := slices.Grow(s.pushing[:0], len(e.Tasks))[:len(e.Tasks)]
	defer func() {
		clear(as)
		if cap(as) <= 1024 {
			s.pushing = as[:0]
		}
	}()
	for i, t := range e.Tasks {
		// Effects are applied by one drainer at a time, in order: the
		// push that makes a task's Assignment comes before its recall.
		a := t.Attach
		if a == nil {
			a = s.assignments.New()
			*a = Assignment{spec: t.Spec, packed: t.Packed, task: t.ID(), direct: s, dtask: t}
			t.Attach = a
		}
		a.worker, a.lease, a.started = e.Worker, e.Lease, now
		as[i] = a
		if t.Trace() != nil {
			s.spans(t, e, i)
		}
	}
	if slot == nil || !slot.pushDirect(e.Lease, as, &s.enc, wait) {
		// The lease ended (its worker died) before they went out: they
		// never ran; their owner retries them.
		for _, a := range as {
			s.crashed(a, "the worker leased to run it died before it was sent")
		}
		return
	}
	s.useMu.Lock()
	s.use.add(e.Worker, e.Lease, len(as), 0)
	s.useMu.Unlock()
}

// spans makes the queue and schedule spans of a traced task as it is
// pushed: its wait here, then its hand-off to the worker.
func (s *Submitter) spans(t *DirectTask, e *PushDirect, i int) {
	parent := telemetry.Extract(context.Background(), t.Trace())
	reason := "none"
	if e.At > t.queued {
		reason = string(PendingWorker)
	}
	_, q := s.cfg.Tracer.Start(parent, "queue "+t.Common().Name, trace.WithTimestamp(t.Queued()),
		trace.WithAttributes(attribute.String("atoll.task_id", t.ID().String()), attribute.Int("atoll.attempt", int(t.Attempt())),
			attribute.String("atoll.pending_reason", reason), attribute.Bool("atoll.leased", true)))
	q.End()
	_, sched := s.cfg.Tracer.Start(parent, "schedule "+t.Common().Name,
		trace.WithAttributes(attribute.String("atoll.task_id", t.ID().String()),
			attribute.String("atoll.worker_id", e.Worker.String()), attribute.String("atoll.node_id", s.cfg.NodeID.String()),
			attribute.Int("atoll.pipelined", e.Before+i), attribute.Bool("atoll.leased", true)))
	sched.End()
}

// endSpans ends the queue span of a traced task that fails before it is
// pushed.
func (s *Submitter) endSpans(t *DirectTask, reason string) {
	if t.Trace() == nil {
		return
	}
	_, q := s.cfg.Tracer.Start(telemetry.Extract(context.Background(), t.Trace()), "queue "+t.Common().Name, trace.WithTimestamp(t.Queued()),
		trace.WithAttributes(attribute.String("atoll.task_id", t.ID().String()), attribute.String("atoll.pending_reason", reason)))
	q.End()
}

// recall asks a worker for a task back (Slot.recall, on a goroutine of
// its own); the answer steps the core.
func (s *Submitter) recall(e RecallDirect) {
	slot := s.slotOf(e.Lease)
	a := e.Task.Attach
	id, attempt, lease := e.Task.ID(), e.Task.Attempt(), e.Lease
	answer := func(ok bool) {
		s.step(false, func(c *SubmitCore) { c.Recalled(time.Now(), lease, id, attempt, ok) })
	}
	if slot == nil {
		answer(false)
		return
	}
	slot.recall(a, answer)
}

// finished takes an attempt's result from its worker's connection reader
// (Assignment.Report): the core hears of it first (a retry of the task
// may follow the result), its pushes go out, then the owner gets it.
func (s *Submitter) finished(a *Assignment, res *atollpb.TaskResult) {
	t := a.dtask
	end := time.Now()
	s.step(false, func(c *SubmitCore) { c.Finished(end, a.lease, a.task, t.Attempt()) })
	s.useMu.Lock()
	s.use.add(a.worker, a.lease, 0, 1)
	full := s.events.Add(directEvent(a, end, res.GetError()))
	s.useMu.Unlock()
	if full {
		s.flushUse()
	}
	s.cfg.Deliver(res)
}

// crashed reports an attempt whose worker died.
func (s *Submitter) crashed(a *Assignment, reason string) {
	crash := errs.ToProto(&errs.WorkerCrashedError{TaskName: a.common().Name, TaskID: a.task.String(), Message: reason})
	s.useMu.Lock()
	s.use.add(a.worker, a.lease, 0, 1)
	s.events.Add(directEvent(a, time.Now(), crash))
	s.useMu.Unlock()
	s.cfg.Deliver(&atollpb.TaskResult{TaskId: a.task.Bytes(), Attempt: a.attempt(), Error: crash, WorkerId: a.worker.Bytes()})
}

// The raylet's side: Grant, RecallLease, LeaseBlocked, LeaseLost and
// LeaseRefused applied by its shell, on its goroutine.

func (s *Submitter) granted(req, lease uint64, worker ids.WorkerID, slot *Slot) {
	slot.leaseTo(s, lease)
	s.mu.Lock()
	s.slots[lease] = slot
	s.mu.Unlock()
	s.step(false, func(c *SubmitCore) { c.Granted(time.Now(), req, lease, worker) })
}

func (s *Submitter) recallLease(lease uint64) {
	s.step(false, func(c *SubmitCore) { c.Recall(time.Now(), lease) })
}

func (s *Submitter) leaseBlocked(lease uint64, blocked bool) {
	s.step(false, func(c *SubmitCore) { c.Blocked(time.Now(), lease, blocked) })
}

// lost: lease's worker died. The core forgets the lease first (a retry
// of a task reported crashed must find it gone), then what the slot
// still held is reported crashed.
func (s *Submitter) lost(lease uint64, slot *Slot, reason string) {
	s.mu.Lock()
	delete(s.slots, lease)
	s.mu.Unlock()
	s.step(false, func(c *SubmitCore) { c.Lost(time.Now(), lease) })
	if slot == nil {
		return
	}
	for _, a := range slot.takeLease(lease) {
		s.crashed(a, reason)
	}
	s.flushUse()
}

func (s *Submitter) refused(req uint64, err *atollpb.ErrorInfo) {
	s.step(false, func(c *SubmitCore) { c.Refused(time.Now(), req, err) })
}

// leaseUse is what a submitter tells the raylet of its leases' use since
// its last report: per lease, tasks pushed and finished; the timeline's
// events.
type leaseUse struct {
	holder *Submitter
	counts []leaseCount
	events []TaskEvent
}

type leaseCount struct {
	worker           ids.WorkerID
	lease            uint64
	pushed, finished int
}

func (u *leaseUse) add(worker ids.WorkerID, lease uint64, pushed, finished int) {
	for i := range u.counts {
		if c := &u.counts[i]; c.lease == lease {
			c.pushed += pushed
			c.finished += finished
			return
		}
	}
	u.counts = append(u.counts, leaseCount{worker: worker, lease: lease, pushed: pushed, finished: finished})
}

// recycle takes back the events of a report the raylet has applied.
func (s *Submitter) recycle(events []TaskEvent) {
	s.useMu.Lock()
	s.events.Recycle(events)
	s.useMu.Unlock()
}

// flushUse sends the raylet the use gathered since the last report, if
// any.
func (s *Submitter) flushUse() {
	if u := s.takeUse(); u != nil {
		s.cfg.System.Root.Send(s.cfg.Raylet, u)
	}
}

// takeUse takes the use gathered since the last report, or nil if there
// is none.
func (s *Submitter) takeUse() *leaseUse {
	s.useMu.Lock()
	defer s.useMu.Unlock()
	if len(s.use.counts) == 0 && s.events.Len() == 0 {
		return nil
	}
	u := s.use
	s.use = leaseUse{}
	u.holder, u.events = s, s.events.Take()
	return &u
}

// directEvent is the timeline's entry of a submitter's attempt.
func directEvent(a *Assignment, end time.Time, err *atollpb.ErrorInfo) TaskEvent {
	e := TaskEvent{TaskID: a.task, Name: a.common().Name, Worker: a.worker, Start: a.started, End: end, Failed: err != nil}
	if err != nil {
		e.Error, e.RemoteStack = cut(err.GetMessage(), maxEventError), cut(err.GetRemoteStack(), maxEventError)
	}
	e.JobID, _ = ids.FromBytes(a.common().GetJobId())
	if tc := a.trace(); tc != nil {
		e.TraceID = traceID(tc.GetTraceparent())
	}
	return e
}

// Messages of a submitter to the raylet.
type (
	leaseRequest struct {
		holder *Submitter
		req    uint64
		spec   *atollpb.TaskSpec
	}
	leaseCancel struct {
		holder *Submitter
		req    uint64
	}
	leaseReturn struct {
		worker ids.WorkerID
		lease  uint64
	}
)
