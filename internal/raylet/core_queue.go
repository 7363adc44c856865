package raylet

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/simbugs"
)

// The queue: tasks wait by scheduling class; schedule asks the policy
// (Pick) how many of each class start now, under the resources, the free
// worker slots, the admission cap on argument bytes and the root slots.

// Submit is a task submitted to this node by owner (m.Forwarded: placed
// here by a peer, after m.Hops raylets).
func (c *Core) Submit(now time.Time, m *atollpb.SubmitTask, owner *actor.PID) {
	c.now = now
	spec := m.Spec
	t := &task{
		spec:    spec,
		id:      ids.MustFromBytes(spec.TaskId),
		owner:   owner,
		demand:  Resources(spec.Resources),
		isActor: spec.Type == atollpb.TaskType_ACTOR_CREATION_TASK,
		hops:    m.Hops,
	}
	copyOf := !c.took(submission{task: t.id, attempt: spec.Attempt, hops: m.Hops}) && !simbugs.On(simbugs.RayletRunsLateCopies)
	if c.holds(t.id, spec) || copyOf {
		c.cfg.Logger.Debug("raylet: dropped a duplicated submission of a task it holds or held", "task", spec.Name, "attempt", spec.Attempt)
		return
	}
	c.holding[t.id] = spec.Attempt
	if t.demand == nil {
		t.demand = Resources{}
	}
	if pg, index, ok := InGroup(spec.Scheduling); ok {
		if c.removedGroups.has(pg) {
			c.fail(t, &errs.UnschedulableError{TaskName: spec.Name, TaskID: t.id.String(),
				Reason: fmt.Sprintf("its placement group %s was removed", pg.Short())})
			return
		}
		t.demand, t.inGroup = BundleDemand(t.demand, pg, index), true
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
	if c.cfg.Processes && c.binaryFor(spec) == "" {
		c.fail(t, errs.Invalidf("task %s: node %s was started without a worker binary and the task names none", spec.Name, c.cfg.NodeID.Short()))
		return
	}
	c.place(t, m.Forwarded, m.Hops) // queued here, forwarded, waiting for a node (or bundle), or failed
}

// enqueue queues a task placed on this node and reports whether it did
// (the caller schedules); false: it failed.
func (c *Core) enqueue(t *task) bool {
	spec := t.spec
	t.binary = c.binaryFor(spec)
	if c.cfg.CheckBinary != nil {
		bin, err := c.cfg.CheckBinary(spec, t.binary)
		if err != nil {
			c.cfg.Logger.Warn("raylet: refused a task's worker binary", "task", spec.Name, "err", err)
			c.fail(t, err)
			return false
		}
		t.binary = bin
		c.useBinary(bin, spec.OwnerAddress)
	}
	if !Feasible(c.total, t.demand) {
		c.fail(t, errs.Invalidf("task %s demands %v but node %s has %v in all", spec.Name, t.demand, c.cfg.NodeID.Short(), c.total))
		return false
	}
	c.startSpan(t, false)
	key := ClassKey(t.demand, t.isActor, t.root)
	cq := c.classes[key]
	if cq == nil {
		cq = &classQueue{key: key, demand: t.demand, noSlot: t.isActor, root: t.root}
		c.classes[key] = cq
	}
	c.seq++
	t.seq, t.class = c.seq, cq
	cq.tasks = append(cq.tasks, t)
	c.queued++
	if t.holder == nil {
		c.stats.Submitted++
	}
	return true
}

// fail answers t's owner with err (a lease request's holder with
// LeaseRefused).
func (c *Core) fail(t *task, err error) {
	if t.holder != nil {
		c.emit(LeaseRefused{Holder: t.holder, Request: t.request, Err: errs.ToProto(err)})
		return
	}
	c.reply(t.owner, &atollpb.TaskResult{TaskId: t.spec.TaskId, Attempt: t.spec.Attempt, Error: errs.ToProto(err)})
}

func (c *Core) reply(owner *actor.PID, res *atollpb.TaskResult) {
	if owner != nil {
		c.emit(Reply{Owner: owner, Result: res})
	}
}

// schedule dispatches every queued task the policy allows.
func (c *Core) schedule() {
	if c.queued == 0 {
		return
	}
	active := c.active[:0]
	for _, cq := range c.classes {
		if len(cq.tasks) > 0 {
			active = append(active, cq)
		}
	}
	slices.SortFunc(active, func(a, b *classQueue) int { return cmp.Compare(a.tasks[0].seq, b.tasks[0].seq) })
	lim := c.limits()
	cands := slices.Grow(c.cands[:0], len(active))[:len(active)]
	for i, cq := range active {
		cands[i] = Candidate{Demand: cq.demand, NoSlot: cq.noSlot, Root: cq.root, Count: len(cq.tasks)}
		if cq.root {
			continue // root tasks have no object arguments to list
		}
		// Only the tasks that could start need their arguments listed:
		// listing every queued task would cost O(queue) per decision (one
		// spare covers rounding of fractional demands).
		n := min(c.avail.Times(cq.demand, len(cq.tasks))+1, len(cq.tasks))
		if !cq.noSlot {
			n = min(n, max(lim.FreeSlots, 0))
		}
		cands[i].Args = make([][]ArgObject, n)
		for j, t := range cq.tasks[:n] {
			cands[i].Args[j] = t.args
		}
	}
	dispatch, reasons := Pick(cands, c.avail, lim)
	for i, cq := range active {
		n := dispatch[i]
		for _, t := range cq.tasks[:n] {
			c.dispatch(t)
		}
		clear(cq.tasks[:n])
		cq.tasks = cq.tasks[n:]
		c.queued -= n
		if len(cq.tasks) == 0 {
			delete(c.classes, cq.key) // classes come and go with their tasks
		} else if reasons[i] != cq.reason {
			cq.reason = reasons[i]
			cq.tasks[0].queueSpan.AddEvent("pending", trace.WithAttributes(attribute.String("atoll.pending_reason", string(cq.reason))))
		}
	}
	clear(active)
	c.active = active[:0]
	clear(cands)
	c.cands = cands[:0]
	c.fillPipelines()
	c.recallForOthers()
	c.recallLeases()
}

// argsCap is the most argument bytes running tasks may hold.
func (c *Core) argsCap() uint64 { return uint64(c.cfg.ArgsFraction * float64(c.cfg.StoreCapacity)) }

// limits are the admission limits now.
func (c *Core) limits() Limits {
	lim := Limits{
		FreeSlots: len(c.idle) + c.cfg.MaxWorkers - len(c.workers),
		RootSlots: -1,
		ArgsHeld:  c.argsHeld,
		ArgsCap:   c.argsCap(),
		Held:      c.heldFn,
	}
	if slots := RootSlots(c.cfg.Saturation, c.cfg.NumWorkers); slots >= 0 {
		lim.RootSlots = max(0, slots-c.runningRoots)
	}
	return lim
}

// dispatch starts t, which the policy let through: it takes the class's
// resources, and a worker leased to the class (or an actor host).
func (c *Core) dispatch(t *task) {
	c.avail.Sub(t.demand)
	if t.root {
		c.runningRoots++
	}
	if t.isActor {
		c.hold(t)
		c.dequeued(t)
		c.stats.Dispatched++
		c.startActor(t)
		return
	}
	if t.holder != nil {
		c.grant(t)
		return
	}
	w := c.takeIdle(t.binary)
	w.lease = &lease{key: t.class.key, demand: t.demand, root: t.root}
	start := len(c.batch)
	c.batch = append(c.batch, c.prepare(w, t))
	c.push(w, start, 0)
}

// hold counts the objects t reads as held by running tasks (admission).
func (c *Core) hold(t *task) {
	before, more := c.argsHeld, uint64(0)
	for _, a := range t.args {
		h := c.held[a.ID]
		if h == nil {
			h = &heldObject{size: a.Size}
			c.held[a.ID] = h
			c.argsHeld += a.Size
			more += a.Size
		}
		h.readers++
	}
	c.checkAdmission(before, more)
}

// admits reports whether the objects t reads fit under the admission cap
// next to those running tasks hold (the rule Pick applies).
func (c *Core) admits(t *task) bool {
	limit := c.argsCap()
	if limit == 0 || c.argsHeld == 0 {
		return true
	}
	more := uint64(0)
	for i, a := range t.args {
		if c.held[a.ID] != nil || slices.ContainsFunc(t.args[:i], func(b ArgObject) bool { return b.ID == a.ID }) {
			continue
		}
		more += a.Size
	}
	return more == 0 || c.argsHeld+more <= limit
}

// dequeued ends t's queue span: it waited for the reason its class was
// last held back for (a class is forgotten when it empties).
func (c *Core) dequeued(t *task) {
	reason := "none"
	if t.class.reason != PendingNone {
		reason = string(t.class.reason)
	}
	t.queueSpan.SetAttributes(attribute.String("atoll.pending_reason", reason))
	t.queueSpan.End()
	t.queueSpan = nil
}

// prepare records t as assigned to w (its arguments held from now on) and
// returns its attempt.
func (c *Core) prepare(w *worker, t *task) *Assignment {
	c.hold(t)
	c.dequeued(t)
	c.stats.Dispatched++
	c.attempts++
	w.tasks = append(w.tasks, t)
	c.running[t.id] = t
	t.cancelled = false
	t.assigned = &Assignment{spec: t.spec, task: t.id, attemptID: c.attempts, worker: w.id, owner: t.owner, started: c.now}
	return t.assigned
}

// push emits the attempts prepared for w since c.batch[start] as one
// Push; before is how many w held already.
func (c *Core) push(w *worker, start, before int) {
	c.emit(Push{Worker: w.id, Attempts: c.batch[start:len(c.batch):len(c.batch)], Before: before})
}

// Finished reports that an attempt on worker ended with result;
// delivered: the worker gave the result to its owner already.
func (c *Core) Finished(now time.Time, worker ids.WorkerID, attemptID uint64, result *atollpb.TaskResult, delivered bool) {
	c.now = now
	w := c.workers[worker]
	if w == nil {
		return // a killed worker's late result: already reported as a crash
	}
	i := slices.IndexFunc(w.tasks, func(t *task) bool { return t.assigned.attemptID == attemptID })
	if i < 0 {
		return
	}
	t := w.tasks[i]
	w.tasks = slices.Delete(w.tasks, i, i+1)
	c.releaseTask(t)
	delete(c.running, t.id)
	c.stats.Finished++
	c.ended(t, result.GetError())
	if !delivered {
		c.reply(t.owner, result)
	}
	if len(w.tasks) == 0 {
		c.leaseEnded(w)
		c.schedule()
		c.steal()
		return
	}
	if i == 0 {
		w.tasks[0].assigned.started = now // the next one starts
	}
	c.schedule()
}

// ended reports t's attempt done, failed with err if not nil (the
// timeline records it).
func (c *Core) ended(t *task, err *atollpb.ErrorInfo) {
	a := t.assigned
	a.ended, a.failed, a.err = c.now, err != nil, err
	c.emit(Done{Attempt: a})
}

// releaseTask gives back what a task attempt held by itself: the objects
// it read and the CPU it lent while blocked (the lease's resources stay
// with the worker until its last task ends). The caller emits the
// attempt's end (Done or Returned), which releases its context.
func (c *Core) releaseTask(t *task) {
	for _, a := range t.args {
		if h := c.held[a.ID]; h != nil {
			if h.readers--; h.readers == 0 {
				delete(c.held, a.ID)
				c.argsHeld -= h.size
			}
		}
	}
	if t.blocked {
		t.blocked = false
		c.avail.Sub(cpuShare(t.demand))
		if t.root {
			c.runningRoots++
		}
	}
}

// Cancel cancels a task where this node holds it: queued, running or
// waiting for a node, else (unless m names one attempt) where it was
// forwarded. With m.OneAttempt, only that attempt.
func (c *Core) Cancel(now time.Time, m *atollpb.CancelTask) {
	c.now = now
	id := ids.MustFromBytes(m.TaskId)
	other := func(t *task) bool { return m.OneAttempt && t.spec.Attempt != m.Attempt }
	for _, cq := range c.classes {
		for i, t := range cq.tasks {
			if t.id != id || other(t) || t.holder != nil {
				continue
			}
			cq.tasks = append(cq.tasks[:i], cq.tasks[i+1:]...)
			c.queued--
			if len(cq.tasks) == 0 {
				delete(c.classes, cq.key)
			}
			t.queueSpan.SetAttributes(attribute.String("atoll.pending_reason", "cancelled"))
			t.queueSpan.End()
			c.fail(t, &errs.CancelledError{TaskName: t.spec.Name, TaskID: id.String()})
			return
		}
	}
	if t := c.running[id]; t != nil {
		if !other(t) {
			t.cancelled = true
			c.emit(Cancel{Attempt: t.assigned, NonRecursive: m.NonRecursive}) // the executor reports the task cancelled
		}
		return
	}
	if c.cancelWaiting(id, other) || m.OneAttempt {
		return
	}
	if c.cfg.Cluster {
		c.emit(CancelForwarded{Task: id, NonRecursive: m.NonRecursive}) // it may have been forwarded to another node
	}
}

// Blocked reports that a running task blocked in Get (blocked) or
// resumed.
func (c *Core) Blocked(now time.Time, id ids.TaskID, blocked bool) {
	c.now = now
	t := c.running[id]
	if t == nil || t.blocked == blocked {
		return
	}
	t.blocked = blocked
	// A task waiting for its children lends its CPU and, if it is a root
	// task, its root slot: otherwise nested tasks could never start.
	if blocked {
		c.avail.Add(cpuShare(t.demand))
		if t.root {
			c.runningRoots--
		}
		// Its followers must not wait behind it (one may be the very
		// task it waits for).
		if w := c.workers[t.assigned.worker]; w != nil {
			c.recallFollowers(w)
		}
		c.schedule()
	} else {
		c.avail.Sub(cpuShare(t.demand))
		if t.root {
			c.runningRoots++
		}
	}
}

// GeneratorAck passes an owner's ack to the worker running that attempt
// of a generator task; in a cluster an ack for an attempt not running
// here goes on (hops: the link it came on, 0 from an owner of this
// node). Other acks are dropped (the worker learns the count again with
// its next item's answer).
func (c *Core) GeneratorAck(now time.Time, m *atollpb.GeneratorAck, hops int32) {
	c.now = now
	id, err := ids.FromBytes(m.GetTaskId())
	if err != nil {
		return
	}
	t := c.running[id]
	if t == nil || t.spec.Attempt != m.Attempt || !t.spec.Generator {
		if c.cfg.Cluster {
			c.emit(ForwardGeneratorAck{Ack: m, Hops: hops})
		}
		return
	}
	if c.workers[t.assigned.worker] != nil {
		c.emit(AckGenerator{Worker: t.assigned.worker, Ack: m})
	}
}
