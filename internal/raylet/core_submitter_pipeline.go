package raylet

import (
	"slices"
	"time"
)

// A SubmitCore's pipelines: how its leases are filled from their
// class's queue, and how deep.

// pump pushes cl's queue to its leases with room, fewest in flight
// first, then asks for leases for what is left.
func (c *SubmitCore) pump(now time.Time, cl *submitClass) { c.pumpAt(now, cl, c.depth(cl)-1) }

// pumpAt is pump for the leases with at most most tasks in flight.
func (c *SubmitCore) pumpAt(now time.Time, cl *submitClass, most int) {
	depth := c.depth(cl)
	for len(cl.queue) > 0 {
		var best *heldLease
		open := 0
		for _, l := range cl.leases {
			if l.recalled || l.blocked || len(l.inflight) >= depth || len(l.inflight) > most {
				continue
			}
			open++
			if best == nil || len(l.inflight) < len(best.inflight) {
				best = l
			}
		}
		if best == nil {
			break
		}
		// Its room, or its even share of the queue among the leases
		// with room.
		n := min(depth-len(best.inflight), (len(cl.queue)+open-1)/open)
		var batch []*DirectTask
		if n == len(cl.queue) {
			// The whole queue: the batch takes its backing array (a
			// task submitted while others run is a queue of one, pushed
			// at once: no copy of it).
			batch, cl.queue = cl.queue[:n:n], nil
		} else {
			batch = slices.Clone(cl.queue[:n])
			clear(cl.queue[:n])
			cl.queue = cl.queue[n:]
		}
		before := len(best.inflight)
		for _, t := range batch {
			t.lease = best
		}
		if before == 0 {
			best.headSince = now
		}
		best.inflight = append(best.inflight, batch...)
		best.idleSince = time.Time{}
		push := c.pushes.New()
		*push = PushDirect{Lease: best.id, Worker: best.worker, Tasks: batch, Before: before, At: now.UnixNano()}
		c.emit(push)
	}
	if len(cl.queue) == 0 {
		cl.queue = nil // the backing array goes with its tasks
	}
	c.request(cl)
}

// depth is how many tasks each of cl's leases holds: PipelineDepth, or
// twice it while the class's tasks run short (each of the last
// PipelineDepth under ShortTask, none of its leases recalled since).
func (c *SubmitCore) depth(cl *submitClass) int {
	d := c.cfg.PipelineDepth
	if d > 1 && c.cfg.ShortTask > 0 && cl.short >= d {
		return 2 * d
	}
	return d
}

// ran records that a task of cl ran for d: from the end of the task
// before it on its worker (or from its push, if none ran before it) to
// its result.
func (c *SubmitCore) ran(cl *submitClass, d time.Duration) {
	switch {
	case d >= c.cfg.ShortTask:
		cl.short = 0
	case cl.short < c.cfg.PipelineDepth:
		cl.short++
	}
}
