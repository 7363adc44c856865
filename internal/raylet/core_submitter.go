package raylet

import (
	"cmp"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/compact"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/outbox"
	"github.com/atoll-runtime/atoll/internal/slab"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

// SubmitCore is the submitter's side of leases (direct submission, as
// Ray's core worker submits normal tasks): a state machine in the style
// of the Core, pure as it is (no I/O, no clock, no goroutine), whose shell
// is the Submitter (submitter.go). It holds one owner's leasable tasks
// by scheduling class, asks the raylet for workers (RequestLease) while a
// class has work no lease can take, pushes each class's tasks to the
// workers leased to it, up to the pipeline depth each (fewest in flight
// first), takes back tasks not started from a lease whose first task runs
// long while another lease of the class is empty (stealing), and gives a
// lease back once its class has nothing left for it (after Linger idle,
// at once when the raylet recalled it). When a lease's worker dies, the
// shell reports its tasks in flight crashed (the owner retries them) and
// the Core forgets them. Events: Submit, Granted, Refused, Finished,
// Recall, Blocked, Lost, Recalled, Cancel, Tick.
type SubmitCore struct {
	cfg     SubmitConfig
	classes map[string]*submitClass
	// byID holds every task the core holds (queued or in flight), by id.
	byID     map[ids.TaskID]*DirectTask
	byIDMark compact.Mark
	leases   map[uint64]*heldLease
	// requests numbers the lease requests; seq the tasks in arrival
	// order (a task taken back returns to its place).
	requests, seq uint64
	// timer: a Tick is armed for timerAt.
	timer   bool
	timerAt time.Time
	effects []SubmitEffect
	// pushes makes the PushDirect effects.
	pushes slab.Of[PushDirect]
}

// SubmitConfig configures a SubmitCore. Zero fields take the defaults.
type SubmitConfig struct {
	// PipelineDepth is how many tasks a leased worker holds at once;
	// default DefaultPipelineDepth.
	PipelineDepth int
	// Linger is how long a lease with nothing to do is kept for the next
	// tasks of its class before it is given back; default DefaultLinger.
	Linger time.Duration
	// StealAfter is how long a lease's first task must have run before
	// the tasks behind it are taken back for an empty lease; default
	// DefaultStealAfter.
	StealAfter time.Duration
	// MaxRequests bounds a class's lease requests on their way; default
	// DefaultMaxRequests.
	MaxRequests int
	// ShortTask is how quickly each of a class's last PipelineDepth tasks
	// must have run, since the raylet last recalled one of its leases,
	// for its leases to hold twice PipelineDepth: tasks that short go to
	// a worker in bigger pushes, each a system call and a wake-up fewer
	// a task, and none waits long behind another. Default
	// DefaultShortTask; negative: never.
	ShortTask time.Duration
}

// The defaults of SubmitConfig.
const (
	DefaultLinger      = 20 * time.Millisecond
	DefaultStealAfter  = 2 * time.Millisecond
	DefaultMaxRequests = 4
	DefaultShortTask   = time.Millisecond
)

// DirectTask is one attempt of a task a SubmitCore holds: queued, or
// pushed to a leased worker. The core owns its fields but Spec, Packed
// and Attach, the shell's.
type DirectTask struct {
	// Spec is the task's spec, or nil and Packed: packed by its owner
	// (specpack), as most are, so that a million queued cost little.
	Spec   *atollpb.TaskSpec
	Packed *specpack.Spec
	// class is the task's scheduling class (Submit's key).
	class *submitClass
	// Attach is the shell's: the task's assignment, made when it is
	// first pushed.
	Attach *Assignment
	// queued is when it was submitted (its queue span's start, Queued),
	// in Unix nanoseconds: a third of a time.Time's size, for a million
	// tasks held at once (a DirectTask is 72 bytes, made 16 to a run by
	// the shell; its id is read from its spec, ID).
	queued int64

	seq       uint64
	lease     *heldLease
	cancelled bool
	recalling bool
	// one is the array of a queue of this task alone (Submit).
	one [1]*DirectTask
}

func (t *DirectTask) held() specpack.Held { return specpack.Held{Whole: t.Spec, Packed: t.Packed} }

// ID is the task's id, read from its spec (Submit checked it is one).
func (t *DirectTask) ID() ids.TaskID { return t.held().ID() }

// Common is the task's spec or, packed, its shape (specpack.Held.Common).
func (t *DirectTask) Common() *atollpb.TaskSpec { return t.held().Common() }

// Attempt is the attempt's number.
func (t *DirectTask) Attempt() int32 { return t.held().Attempt() }

// Trace is the task's trace context, nil if untraced.
func (t *DirectTask) Trace() *atollpb.TraceContext { return t.held().Trace() }

// Queued is when the task was submitted.
func (t *DirectTask) Queued() time.Time { return time.Unix(0, t.queued) }

// Lease is the lease a task was pushed to (nil while queued).
func (t *DirectTask) Lease() uint64 {
	if t.lease == nil {
		return 0
	}
	return t.lease.id
}

// LeaseKey is the scheduling class of a leasable task as a submitter
// groups them: its demand and the binary its worker runs (the Core's class
// is the demand alone; its workers are picked by binary).
func LeaseKey(spec *atollpb.TaskSpec) string {
	return ClassKey(Resources(spec.Resources), false, true) + "|" + spec.WorkerBinary
}

// Leasable reports whether spec may be submitted under a lease
// (specpack.Leasable).
func Leasable(spec *atollpb.TaskSpec) bool { return specpack.Leasable(spec) }

// submitClass is one class's queue and leases.
type submitClass struct {
	key   string
	queue []*DirectTask
	// leases are the class's leases in the order they were granted;
	// requests its lease requests on their way (by number).
	leases   []*heldLease
	requests []uint64
	// short counts the class's tasks in a row that ran under ShortTask,
	// up to PipelineDepth (depth).
	short int
}

// heldLease is a worker leased to the submitter.
type heldLease struct {
	id     uint64
	worker ids.WorkerID
	class  *submitClass
	// inflight are its tasks in push order: the first runs, the others
	// wait in the worker. headSince is when the first became first.
	inflight  []*DirectTask
	headSince time.Time
	// idleSince is when it last had nothing to do (zero while busy).
	idleSince time.Time
	recalled  bool // the raylet wants it back
	blocked   bool // its running task blocked in Get
	returned  bool
}

// Effects of a SubmitCore, in order.
type (
	// SubmitEffect is one thing the Submitter must do.
	SubmitEffect interface{ submitEffect() }
	// PushDirect writes Tasks to Lease's worker, in order; Before is how
	// many it held already. It is the one effect made for every push,
	// often for every task, so the core emits it by pointer, from runs of
	// them (package slab), where a value would be an allocation boxed.
	PushDirect struct {
		Lease  uint64
		Worker ids.WorkerID
		Tasks  []*DirectTask
		Before int
		// At is when they were pushed (the core's clock, Unix
		// nanoseconds): a task queued at At went out at once.
		At int64
	}
	// AskLease asks the raylet for a worker for the class of Spec
	// (RequestLease), as request Request.
	AskLease struct {
		Request uint64
		Spec    *atollpb.TaskSpec
	}
	// DropLeaseRequest cancels request Request (CancelLeaseRequest).
	DropLeaseRequest struct{ Request uint64 }
	// GiveBack returns Lease to the raylet (ReturnLease).
	GiveBack struct {
		Lease  uint64
		Worker ids.WorkerID
	}
	// RecallDirect asks Lease's worker to give Task back unstarted; the
	// answer comes back as Recalled.
	RecallDirect struct {
		Lease uint64
		Task  *DirectTask
	}
	// CancelDirect asks Lease's worker to cancel Task (queued there: it
	// answers it cancelled; running: its context is cancelled).
	CancelDirect struct {
		Lease        uint64
		Task         *DirectTask
		NonRecursive bool
	}
	// FailDirect answers Task's owner with Err: it was cancelled before
	// it was pushed, or its class cannot run here.
	FailDirect struct {
		Task *DirectTask
		Err  *atollpb.ErrorInfo
		// Cancelled: Err is a cancellation.
		Cancelled bool
	}
	// ArmSubmitTimer asks for Tick After from now.
	ArmSubmitTimer struct{ After time.Duration }
)

func (*PushDirect) submitEffect()      {}
func (AskLease) submitEffect()         {}
func (DropLeaseRequest) submitEffect() {}
func (GiveBack) submitEffect()         {}
func (RecallDirect) submitEffect()     {}
func (CancelDirect) submitEffect()     {}
func (FailDirect) submitEffect()       {}
func (ArmSubmitTimer) submitEffect()   {}

// NewSubmitCore returns a submitter's core holding nothing.
func NewSubmitCore(cfg SubmitConfig) *SubmitCore {
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = DefaultPipelineDepth
	}
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.StealAfter <= 0 {
		cfg.StealAfter = DefaultStealAfter
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.ShortTask == 0 {
		cfg.ShortTask = DefaultShortTask
	}
	return &SubmitCore{cfg: cfg, classes: map[string]*submitClass{}, byID: map[ids.TaskID]*DirectTask{}, leases: map[uint64]*heldLease{}}
}

// Effects returns the effects of the events since the last call, in
// order. The slice is the caller's (the core starts a new one).
func (c *SubmitCore) Effects() []SubmitEffect {
	out := c.effects
	c.effects = nil
	return out
}

// AppendEffects appends the effects produced since the last call to dst,
// in order, forgets them, and returns dst: Effects for a shell that
// queues them anyway, without a slice per event.
func (c *SubmitCore) AppendEffects(dst []SubmitEffect) []SubmitEffect {
	return outbox.Move(dst, &c.effects)
}

// Compact gives back the memory of a table of tasks that emptied out
// (package compact). The shell calls it after each event, where nothing
// ranges over the table.
func (c *SubmitCore) Compact() { c.byID = compact.Map(c.byID, &c.byIDMark) }

// HasEffects reports whether events left effects to take.
func (c *SubmitCore) HasEffects() bool { return len(c.effects) > 0 }

func (c *SubmitCore) emit(e SubmitEffect) { c.effects = append(c.effects, e) }

// Holds returns the task the core holds with id, if any.
func (c *SubmitCore) Holds(id ids.TaskID) *DirectTask { return c.byID[id] }

// Stats are a SubmitCore's counts.
type SubmitStats struct {
	Queued, InFlight, Leases, Requests int
}

// Stats counts what the core holds now.
func (c *SubmitCore) Stats() SubmitStats {
	var s SubmitStats
	for _, cl := range c.classes {
		s.Queued += len(cl.queue)
		s.Requests += len(cl.requests)
		for _, l := range cl.leases {
			s.InFlight += len(l.inflight)
		}
	}
	s.Leases = len(c.leases)
	return s
}

// Submit queues t (its spec Leasable, with a valid task id) in the scheduling class
// key (LeaseKey, as the shell sees it) and pushes it if a lease of its
// class has room.
func (c *SubmitCore) Submit(now time.Time, key string, t *DirectTask) {
	cl := c.classes[key]
	if cl == nil {
		cl = &submitClass{key: key}
		c.classes[key] = cl
	}
	t.class = cl
	c.seq++
	t.seq, t.queued, t.lease, t.cancelled, t.recalling = c.seq, now.UnixNano(), nil, false, false
	c.byID[t.ID()] = t
	if cl.queue == nil {
		// A queue of one (a task submitted while none waits) is the
		// task's own array, pushed as it is.
		t.one[0] = t
		cl.queue = t.one[:1:1]
	} else {
		cl.queue = append(cl.queue, t)
	}
	c.pump(now, cl)
}

// Granted: the raylet granted request req of the class key as lease id
// on worker.
func (c *SubmitCore) Granted(now time.Time, req, id uint64, worker ids.WorkerID) {
	var cl *submitClass
	for _, x := range c.classes {
		if i := slices.Index(x.requests, req); i >= 0 {
			x.requests = slices.Delete(x.requests, i, i+1)
			cl = x
			break
		}
	}
	l := &heldLease{id: id, worker: worker, idleSince: now}
	c.leases[id] = l
	if cl == nil { // its request was cancelled on the way: not needed
		l.returned = true
		delete(c.leases, id)
		c.emit(GiveBack{Lease: id, Worker: worker})
		return
	}
	l.class = cl
	cl.leases = append(cl.leases, l)
	c.pump(now, cl)
	if len(l.inflight) == 0 {
		c.steal(now, cl, l)
	}
	c.settle(now, l)
}

// Refused: the raylet can never grant request req: the class's queued
// tasks fail with err.
func (c *SubmitCore) Refused(now time.Time, req uint64, err *atollpb.ErrorInfo) {
	for _, cl := range c.classes {
		i := slices.Index(cl.requests, req)
		if i < 0 {
			continue
		}
		cl.requests = slices.Delete(cl.requests, i, i+1)
		for _, t := range cl.queue {
			delete(c.byID, t.ID())
			c.emit(FailDirect{Task: t, Err: err})
		}
		clear(cl.queue)
		cl.queue = cl.queue[:0]
		c.forgetClass(cl)
		return
	}
}

// Finished: t's attempt (task id, attempt) ended on lease id; its result
// is the shell's to deliver.
func (c *SubmitCore) Finished(now time.Time, id uint64, task ids.TaskID, attempt int32) {
	t := c.byID[task]
	if t == nil || t.Attempt() != attempt || t.lease == nil || t.lease.id != id {
		return // a lease lost meanwhile: the shell reported it
	}
	l := t.lease
	delete(c.byID, task)
	i := slices.Index(l.inflight, t)
	l.inflight = slices.Delete(l.inflight, i, i+1)
	if i == 0 {
		c.ran(l.class, now.Sub(l.headSince))
		l.headSince = now
	}
	t.lease = nil
	// Leases are refilled once half their depth has run, not as each
	// task ends: a push then carries half a pipeline (one frame, one
	// effect), and the worker has the other half to run meanwhile.
	c.pumpAt(now, l.class, c.depth(l.class)/2)
	if len(l.inflight) == 0 {
		c.steal(now, l.class, l)
	}
	c.settle(now, l)
}

// Recall: the raylet wants lease id back. It gets no more tasks; those
// not started are taken back; it is returned once the others end.
func (c *SubmitCore) Recall(now time.Time, id uint64) {
	l := c.leases[id]
	if l == nil || l.recalled {
		return
	}
	l.recalled = true
	// The raylet wants a worker of the class back (another holder's
	// tasks wait for one): its leases hold no more than the depth until
	// its tasks ran short again, as fewer tasks are then taken back at
	// each recall.
	l.class.short = 0
	c.recallFollowers(l)
	c.settle(now, l)
	c.pump(now, l.class) // its queue may want another lease
}

// Blocked: the task running under lease id blocked in Get (blocked) or
// resumed: while it is blocked the lease takes no task, and those behind
// it are taken back.
func (c *SubmitCore) Blocked(now time.Time, id uint64, blocked bool) {
	l := c.leases[id]
	if l == nil || l.blocked == blocked {
		return
	}
	l.blocked = blocked
	if blocked {
		c.recallFollowers(l)
	}
	c.pump(now, l.class)
}

// Lost: lease id's worker died. The core forgets the tasks in flight
// there (the shell reports each crashed: the owner retries them) and asks
// for another lease if its class has work.
func (c *SubmitCore) Lost(now time.Time, id uint64) {
	l := c.leases[id]
	if l == nil {
		return
	}
	delete(c.leases, id)
	l.returned = true
	for _, t := range l.inflight {
		delete(c.byID, t.ID())
		t.lease = nil
	}
	l.inflight = nil
	cl := l.class
	cl.leases = slices.DeleteFunc(cl.leases, func(x *heldLease) bool { return x == l })
	c.pump(now, cl)
	c.forgetClass(cl)
}

// Recalled is a worker's answer to RecallDirect: ok, it gave t back
// unstarted (t is queued again in its place, or fails cancelled if it
// was cancelled meanwhile); otherwise its result will come.
func (c *SubmitCore) Recalled(now time.Time, id uint64, task ids.TaskID, attempt int32, ok bool) {
	t := c.byID[task]
	if t == nil || t.Attempt() != attempt || t.lease == nil || t.lease.id != id {
		return
	}
	t.recalling = false
	if !ok {
		return
	}
	l := t.lease
	l.inflight = slices.DeleteFunc(l.inflight, func(x *DirectTask) bool { return x == t })
	t.lease = nil
	cl := l.class
	if t.cancelled {
		delete(c.byID, task)
		c.emit(FailDirect{Task: t, Cancelled: true})
	} else {
		at, _ := slices.BinarySearchFunc(cl.queue, t.seq, func(x *DirectTask, seq uint64) int { return cmp.Compare(x.seq, seq) })
		cl.queue = slices.Insert(cl.queue, at, t)
	}
	c.pump(now, cl)
	c.settle(now, l)
}

// Cancel cancels the task with id if the core holds it: queued, it fails
// cancelled at once; pushed, its worker is asked to cancel it (its result
// says so). It reports whether the core held it.
func (c *SubmitCore) Cancel(now time.Time, id ids.TaskID, nonRecursive bool) bool {
	t := c.byID[id]
	if t == nil {
		return false
	}
	if t.lease == nil {
		// The queue is in submission order (seq): a context's tasks are
		// cancelled in that order, each from the head of the queue.
		cl := t.class
		if at, ok := slices.BinarySearchFunc(cl.queue, t.seq, func(x *DirectTask, seq uint64) int { return cmp.Compare(x.seq, seq) }); ok {
			if at == 0 {
				cl.queue[0] = nil
				cl.queue = cl.queue[1:]
			} else {
				cl.queue = slices.Delete(cl.queue, at, at+1)
			}
		}
		delete(c.byID, id)
		c.emit(FailDirect{Task: t, Cancelled: true})
		c.pump(now, cl)
		c.forgetClass(cl)
		return true
	}
	t.cancelled = true
	c.emit(CancelDirect{Lease: t.lease.id, Task: t, NonRecursive: nonRecursive})
	return true
}

// Tick is the timer going off: idle leases past Linger are given back,
// long-running heads let their followers go to empty leases.
func (c *SubmitCore) Tick(now time.Time) {
	c.timer = false
	for _, id := range c.leaseIDs() {
		l := c.leases[id]
		if l == nil {
			continue
		}
		if len(l.inflight) == 0 {
			c.steal(now, l.class, l)
		}
		c.settle(now, l)
	}
}

// leaseIDs are the leases' ids in order (deterministic effects).
func (c *SubmitCore) leaseIDs() []uint64 {
	out := make([]uint64, 0, len(c.leases))
	for id := range c.leases {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// request asks for leases while cl has tasks no lease can take now, one
// per depth's worth of them (at most MaxRequests on their way), or one
// while tasks wait behind running ones (a worker free elsewhere could
// take them), and cancels its requests once it has neither.
func (c *SubmitCore) request(cl *submitClass) {
	want := min(c.cfg.MaxRequests, (len(cl.queue)+c.cfg.PipelineDepth-1)/c.cfg.PipelineDepth)
	if want == 0 && slices.ContainsFunc(cl.leases, func(l *heldLease) bool { return !l.recalled && len(l.inflight) > 1 }) {
		want = 1
	}
	if want == 0 {
		for _, req := range cl.requests {
			c.emit(DropLeaseRequest{Request: req})
		}
		cl.requests = nil
		return
	}
	for len(cl.requests) < want {
		c.requests++
		cl.requests = append(cl.requests, c.requests)
		example := c.example(cl)
		c.emit(AskLease{Request: c.requests, Spec: example})
	}
}

// example is a task of cl to name its class to the raylet.
func (c *SubmitCore) example(cl *submitClass) *atollpb.TaskSpec {
	if len(cl.queue) > 0 {
		return cl.queue[0].Common()
	}
	for _, l := range cl.leases {
		if len(l.inflight) > 0 {
			return l.inflight[0].Common()
		}
	}
	return nil
}

// steal takes back the tasks waiting behind the first of the fullest
// lease of cl, for the empty lease l, once that first task has run for
// StealAfter (else a timer looks again then).
func (c *SubmitCore) steal(now time.Time, cl *submitClass, l *heldLease) {
	if len(cl.queue) > 0 || l.recalled || l.blocked {
		return
	}
	var from *heldLease
	for _, x := range cl.leases {
		if x != l && len(x.inflight) > 1 && (from == nil || len(x.inflight) > len(from.inflight)) {
			from = x
		}
	}
	if from == nil {
		return
	}
	if due := from.headSince.Add(c.cfg.StealAfter); now.Before(due) {
		c.arm(now, due)
		return
	}
	c.recallFollowers(from)
}

// recallFollowers takes back the tasks l holds behind its first.
func (c *SubmitCore) recallFollowers(l *heldLease) {
	for _, t := range l.inflight[min(1, len(l.inflight)):] {
		if !t.recalling {
			t.recalling = true
			c.emit(RecallDirect{Lease: l.id, Task: t})
		}
	}
}

// settle gives l back when it has nothing in flight and its class
// nothing queued: at once if it was recalled, after Linger otherwise.
func (c *SubmitCore) settle(now time.Time, l *heldLease) {
	if l.returned || len(l.inflight) > 0 || (len(l.class.queue) > 0 && !l.recalled && !l.blocked) {
		return
	}
	if l.idleSince.IsZero() {
		l.idleSince = now
	}
	if !l.recalled && now.Sub(l.idleSince) < c.cfg.Linger {
		c.arm(now, l.idleSince.Add(c.cfg.Linger))
		return
	}
	l.returned = true
	delete(c.leases, l.id)
	cl := l.class
	cl.leases = slices.DeleteFunc(cl.leases, func(x *heldLease) bool { return x == l })
	c.emit(GiveBack{Lease: l.id, Worker: l.worker})
	c.request(cl)
	c.forgetClass(cl)
}

// arm asks for a Tick at due unless one is armed for no later.
func (c *SubmitCore) arm(now, due time.Time) {
	if c.timer && !c.timerAt.After(due) {
		return
	}
	c.timer, c.timerAt = true, due
	c.emit(ArmSubmitTimer{After: max(due.Sub(now), 0)})
}

// forgetClass drops cl once it holds nothing.
func (c *SubmitCore) forgetClass(cl *submitClass) {
	if len(cl.queue) == 0 && len(cl.leases) == 0 && len(cl.requests) == 0 && c.classes[cl.key] == cl {
		delete(c.classes, cl.key)
	}
}
