package raylet

import (
	"cmp"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Leases to submitters (direct submission, as Ray's raylet leases workers
// to core workers): a submitter asks for a worker for a scheduling class
// (RequestLease, with a task of the class as its example), and the Core
// queues the request with the class's tasks, where the policy starts it
// as it would start one of them — the class's resources, a root slot,
// a worker of the class's binary — and grants the worker (Grant). From
// then on the submitter writes the class's tasks straight to the worker
// and reads their results back; the Core hears of them only in batches
// (LeaseUse). The lease holds its resources and root slot once, however
// many tasks run under it, until the submitter returns it (ReturnLease):
// when its queue of the class drained, when the Core recalls it
// (RecallLease: another class or another submitter waits for resources, a
// worker or a root slot, or consumers wait for memory while it runs root
// tasks), or when the worker dies (LeaseLost; the submitter reports its
// tasks in flight crashed). A task on a leased worker that blocks in Get
// lends the lease's CPU and root slot as a task of the Core's own does,
// and the holder is told (LeaseBlocked) to take back the tasks waiting
// behind it. Only root tasks (no object arguments: nothing to admit by
// argument bytes) are leased; the Core never pushes tasks of its own to a
// leased worker.

// RequestLease queues holder's request (req, its number for the holder)
// for a worker for the class of spec: its demand, its binary. A request
// that cannot be granted ever (the binary is refused, the demand is more
// than the node has) is answered with LeaseRefused.
func (c *Core) RequestLease(now time.Time, holder any, req uint64, spec *atollpb.TaskSpec) {
	c.now = now
	t := &task{spec: spec, demand: Resources(spec.Resources), root: true, holder: holder, request: req}
	if t.demand == nil {
		t.demand = Resources{}
	}
	c.stats.LeaseRequests++
	if c.cfg.Processes && c.binaryFor(spec) == "" {
		c.fail(t, errs.Invalidf("task %s: node %s was started without a worker binary and the task names none", spec.Name, c.cfg.NodeID.Short()))
		return
	}
	if c.enqueue(t) {
		c.queuedRequests++
		c.schedule()
	}
}

// CancelLeaseRequest drops holder's queued request req (its queue
// drained before a worker was free).
func (c *Core) CancelLeaseRequest(now time.Time, holder any, req uint64) {
	c.now = now
	for _, cq := range c.classes {
		for i, t := range cq.tasks {
			if t.holder != holder || t.request != req {
				continue
			}
			cq.tasks = slices.Delete(cq.tasks, i, i+1)
			c.queued--
			c.queuedRequests--
			if len(cq.tasks) == 0 {
				delete(c.classes, cq.key)
			}
			return
		}
	}
}

// grant leases an idle worker to t's holder (t is its lease request; the
// class's resources and root slot are taken already).
func (c *Core) grant(t *task) {
	c.queuedRequests--
	c.dequeued(t)
	w := c.takeIdle(t.binary)
	c.leases++
	w.lease = &lease{key: t.class.key, demand: t.demand, root: t.root, holder: t.holder, id: c.leases}
	c.stats.LeasesGranted++
	c.emit(Grant{Holder: t.holder, Request: t.request, Worker: w.id, Lease: w.lease.id})
}

// leasedTo returns the worker holding lease id, if it is still granted.
func (c *Core) leasedTo(worker ids.WorkerID, id uint64) *worker {
	w := c.workers[worker]
	if w == nil || w.lease == nil || w.lease.holder == nil || w.lease.id != id {
		return nil
	}
	return w
}

// ReturnLease gives a leased worker back: it has no task of its holder
// left. A lease that ended already (its worker died) is ignored.
func (c *Core) ReturnLease(now time.Time, worker ids.WorkerID, id uint64) {
	c.now = now
	w := c.leasedTo(worker, id)
	if w == nil {
		return
	}
	if w.lease.recalling {
		c.leaseRecalls--
	}
	c.stats.LeasesReturned++
	c.leaseEnded(w)
	c.schedule()
	c.steal()
}

// LeaseUse reports, in a batch, the tasks a holder pushed to a leased
// worker and those that finished there since its last report (the
// counters of State; the timeline hears of them from the shell).
func (c *Core) LeaseUse(now time.Time, worker ids.WorkerID, id uint64, pushed, finished int) {
	c.now = now
	c.stats.Dispatched += uint64(pushed)
	c.stats.Finished += uint64(finished)
	c.stats.Submitted += uint64(pushed)
}

// WorkerBlocked reports that task, running on worker, blocked in Get
// (blocked) or resumed: a task of the Core's own as Blocked does; on a
// leased worker, the lease lends its CPU and root slot meanwhile, and its
// holder is told (LeaseBlocked) so that the tasks it pushed behind the
// blocked one go elsewhere.
func (c *Core) WorkerBlocked(now time.Time, worker ids.WorkerID, task ids.TaskID, blocked bool) {
	c.now = now
	if c.running[task] != nil {
		c.Blocked(now, task, blocked)
		return
	}
	w := c.workers[worker]
	if w == nil || w.lease == nil || w.lease.holder == nil || w.lease.blocked == blocked {
		return
	}
	l := w.lease
	l.blocked = blocked
	c.emit(LeaseBlocked{Holder: l.holder, Worker: w.id, Lease: l.id, Blocked: blocked})
	if blocked {
		c.avail[CPU] += l.demand[CPU]
		if l.root {
			c.runningRoots--
		}
		c.schedule()
		return
	}
	c.avail[CPU] -= l.demand[CPU]
	if l.root {
		c.runningRoots++
	}
}

// loseLease tells a dead worker's holder that its lease is gone.
func (c *Core) loseLease(w *worker, reason string) {
	if l := w.lease; l != nil && l.holder != nil {
		if l.recalling {
			c.leaseRecalls--
			l.recalling = false
		}
		c.emit(LeaseLost{Holder: l.holder, Worker: w.id, Lease: l.id, Reason: reason})
	}
}

// recallLeases asks a holder for a lease back while a class waits for
// resources, a worker or a root slot (or, for root leases, consumers wait
// for memory) that the lease holds: one recall at a time, and for a
// holder's request only while that holder has no worker of the class
// (it gets more as its leases or others free up: two submitters of one
// class share the workers, they do not take them from each other in
// turns).
func (c *Core) recallLeases() {
	if c.queued == 0 || c.leaseRecalls > 0 || c.leases == 0 {
		return
	}
	waiting := c.active[:0]
	for _, cq := range c.classes {
		switch cq.reason {
		case PendingResources, PendingWorker, PendingRootQueued, PendingMemory:
			if len(cq.tasks) > 0 {
				waiting = append(waiting, cq)
			}
		}
	}
	slices.SortFunc(waiting, func(a, b *classQueue) int { return cmp.Compare(a.tasks[0].seq, b.tasks[0].seq) })
	defer func() {
		clear(waiting)
		c.active = waiting[:0]
	}()
	for _, cq := range waiting {
		head := cq.tasks[0]
		if head.holder != nil && c.holdsClass(head.holder, cq.key) {
			continue // it has workers of the class: it gets more as they free up
		}
		for _, w := range c.pool {
			l := w.lease
			if l == nil || l.holder == nil || l.recalling {
				continue
			}
			if cq.reason == PendingMemory && !l.root {
				continue
			}
			l.recalling = true
			c.leaseRecalls++
			c.stats.LeaseRecalls++
			c.emit(RecallLease{Holder: l.holder, Worker: w.id, Lease: l.id})
			return
		}
	}
}

// holdsClass reports whether holder holds a lease of class key.
func (c *Core) holdsClass(holder any, key string) bool {
	for _, w := range c.pool {
		if w.leased() && w.lease.holder == holder && w.lease.key == key {
			return true
		}
	}
	return false
}

// leased reports whether w is leased to a holder (no task of the Core's
// own runs on it, yet it is not idle).
func (w *worker) leased() bool { return w.lease != nil && w.lease.holder != nil }
