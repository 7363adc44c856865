package raylet

import (
	"cmp"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Pipelining: a worker leased to a scheduling class holds up to
// PipelineDepth of its tasks (fillPipelines), and gives back those it has
// not started when they would wait behind a blocked task, when another
// worker is idle, or when another class waits (recalls).

// fillPipelines pushes more of the one queued class's tasks to the
// workers leased to it, up to the pipeline depth each. A worker is topped
// up once its pipeline is down to half the depth, several tasks in one
// write, and the queue is shared evenly among the workers that have
// room. Only while no other class waits (that one may need a worker
// first: consumers go before roots), only workers whose running task is
// not blocked, and only tasks whose arguments fit under the admission
// cap.
func (c *Core) fillPipelines() {
	depth := c.cfg.PipelineDepth
	if depth <= 1 || c.queued == 0 {
		return
	}
	var cq *classQueue
	for _, q := range c.classes {
		if len(q.tasks) > 0 {
			if cq != nil {
				return
			}
			cq = q
		}
	}
	if cq == nil || cq.noSlot {
		return
	}
	low := max(1, depth/2)
	binary := cq.tasks[0].binary
	open := c.open[:0]
	for _, w := range c.pool {
		if w.lease != nil && w.lease.key == cq.key && len(w.tasks) > 0 && len(w.tasks) <= low && !w.tasks[0].blocked && w.binary == binary {
			open = append(open, w)
		}
	}
	// Fewest tasks first; equals in start order.
	slices.SortStableFunc(open, func(a, b *worker) int { return cmp.Compare(len(a.tasks), len(b.tasks)) })
	for i, w := range open {
		share := (len(cq.tasks) + len(open) - i - 1) / (len(open) - i) // an even split of what is left
		n := min(depth-len(w.tasks), share)
		before, start := len(w.tasks), len(c.batch)
		for len(c.batch)-start < n && len(cq.tasks) > 0 {
			t := cq.tasks[0]
			if w.binary != t.binary || !c.admits(t) {
				break
			}
			cq.tasks[0] = nil
			cq.tasks = cq.tasks[1:]
			c.queued--
			c.batch = append(c.batch, c.prepare(w, t)) // held: the next is admitted against it
		}
		if len(c.batch) > start {
			c.push(w, start, before)
		}
	}
	clear(open)
	c.open = open[:0]
	if len(cq.tasks) == 0 {
		delete(c.classes, cq.key)
	}
}

// recallFollowers asks w to give back the attempts it holds and has not
// started: they are queued here again when it does (work stealing; a
// blocked task's followers).
func (c *Core) recallFollowers(w *worker) {
	if len(w.tasks) < 2 {
		return
	}
	for _, t := range w.tasks[1:] {
		if t.recalling {
			continue
		}
		t.recalling = true
		c.stats.Recalls++
		c.emit(Recall{Attempt: t.assigned})
	}
}

// Recalled is a worker's answer to a Recall: ok, it gave the attempt back
// unstarted (it is queued again in its place by arrival order, or failed
// if it was cancelled meanwhile); otherwise it started it and its result
// will come.
func (c *Core) Recalled(now time.Time, worker ids.WorkerID, attemptID uint64, ok bool) {
	c.now = now
	w := c.workers[worker]
	if w == nil {
		return // it died: its death reported the attempt
	}
	i := slices.IndexFunc(w.tasks, func(t *task) bool { return t.assigned.attemptID == attemptID })
	if i < 0 {
		return
	}
	t := w.tasks[i]
	t.recalling = false
	if !ok {
		return
	}
	w.tasks = slices.Delete(w.tasks, i, i+1)
	c.releaseTask(t)
	delete(c.running, t.id)
	c.stats.Recalled++
	c.emit(Returned{Attempt: t.assigned})
	if len(w.tasks) == 0 {
		c.leaseEnded(w)
	}
	if t.cancelled { // while it waited in the worker
		c.fail(t, &errs.CancelledError{TaskName: t.spec.Name, TaskID: t.id.String()})
		c.schedule()
		return
	}
	t.assigned = nil
	c.startSpan(t, true)
	cq := c.classes[t.class.key]
	if cq == nil {
		cq = t.class
		cq.tasks = cq.tasks[:0]
		c.classes[cq.key] = cq
	}
	t.class = cq
	at, _ := slices.BinarySearchFunc(cq.tasks, t.seq, func(x *task, seq uint64) int { return cmp.Compare(x.seq, seq) })
	cq.tasks = slices.Insert(cq.tasks, at, t)
	c.queued++
	c.schedule()
}

// leaseEnded makes a worker that has no task left idle and gives its
// lease's resources back.
func (c *Core) leaseEnded(w *worker) {
	c.endLease(w)
	w.idleSince = c.now
	c.idle = append(c.idle, w.id)
	c.armReaper()
}

// endLease gives w's lease's resources and root slot back (what a
// blocked task of a holder's lent is taken back first).
func (c *Core) endLease(w *worker) {
	if l := w.lease; l != nil {
		if l.blocked {
			c.avail[CPU] -= l.demand[CPU]
			if l.root {
				c.runningRoots++
			}
		}
		c.giveBack(l.demand)
		if l.root {
			c.runningRoots--
		}
		w.lease = nil
	}
}

// steal recalls the waiting attempts of the longest pipeline when a
// worker is idle and nothing is queued: they run sooner on the idle one.
func (c *Core) steal() {
	if c.queued > 0 || len(c.idle) == 0 || c.cfg.PipelineDepth <= 1 {
		return
	}
	var from *worker
	for _, w := range c.pool {
		if len(w.tasks) > 1 && (from == nil || len(w.tasks) > len(from.tasks)) {
			from = w
		}
	}
	if from != nil {
		c.recallFollowers(from)
	}
}

// recallForOthers takes back the pipelined attempts of workers leased to
// other classes while some class waits for a worker or resources:
// pipelining must not let one class keep the workers from another (nor
// roots from the consumers that go first).
func (c *Core) recallForOthers() {
	if c.queued == 0 || c.cfg.PipelineDepth <= 1 {
		return
	}
	var waiting *classQueue
	several := false
	for _, cq := range c.classes {
		if len(cq.tasks) > 0 && (cq.reason == PendingResources || cq.reason == PendingWorker || cq.reason == PendingRootQueued) {
			several = several || waiting != nil
			waiting = cq
		}
	}
	if waiting == nil {
		return
	}
	for _, w := range c.pool {
		if len(w.tasks) > 1 && w.lease != nil && (several || w.lease.key != waiting.key) {
			c.recallFollowers(w)
		}
	}
}
