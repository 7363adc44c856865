package raylet

import (
	"maps"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The worker pool: starting workers, replacing dead ones (with a backoff
// for a binary whose processes exit before they register), and reaping
// the surplus idle ones.

// Respawn backoff of worker processes that exit before they register (a
// binary that cannot start): 100 ms, doubling, at most 30 s.
const (
	respawnBackoffMin = 100 * time.Millisecond
	respawnBackoffMax = 30 * time.Second
)

// respawnDelay is the wait before the next start of a binary whose last
// failures processes exited before registering.
func respawnDelay(failures int) time.Duration {
	d := respawnBackoffMin
	for i := 1; i < failures && d < respawnBackoffMax; i++ {
		d *= 2
	}
	return min(d, respawnBackoffMax)
}

// takeIdle takes an idle worker running binary, starting one if there is
// none (and stopping an idle worker of another binary if the pool is full).
func (c *Core) takeIdle(binary string) *worker {
	for i := len(c.idle) - 1; i >= 0; i-- {
		if w := c.workers[c.idle[i]]; w.binary == binary {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return w
		}
	}
	if len(c.workers) >= c.cfg.MaxWorkers && len(c.idle) > 0 {
		old := c.workers[c.idle[0]]
		c.idle = c.idle[1:]
		c.forget(old)
	}
	w := c.spawnWorker(binary)
	c.idle = c.idle[:len(c.idle)-1]
	return w
}

// spawnWorker starts a worker of binary; it is idle.
func (c *Core) spawnWorker(binary string) *worker {
	w := &worker{id: c.cfg.NewWorkerID(), binary: binary}
	c.emit(StartWorker{Worker: w.id, Binary: binary})
	c.workers[w.id] = w
	c.pool = append(c.pool, w)
	c.idle = append(c.idle, w.id)
	return w
}

// forget stops w and drops it from the pool (not from idle).
func (c *Core) forget(w *worker) {
	c.emit(StopWorker{Worker: w.id})
	delete(c.workers, w.id)
	if i := slices.Index(c.pool, w); i >= 0 {
		c.pool = slices.Delete(c.pool, i, i+1)
	}
}

// KillWorker kills the worker m names (by the task it runs, or by id: an
// actor's worker crashes its actor instead). The shell then reports the
// worker's exit.
func (c *Core) KillWorker(now time.Time, m *atollpb.KillWorker) {
	c.now = now
	var w *worker
	if len(m.TaskId) > 0 {
		if t := c.running[ids.MustFromBytes(m.TaskId)]; t != nil {
			w = c.workers[t.assigned.worker]
		}
	} else {
		id := ids.MustFromBytes(m.WorkerId)
		w = c.workers[id]
		for _, a := range c.actors {
			if a.worker == id {
				c.emit(CrashHost{Actor: a.id, Reason: m.Reason})
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
	c.stats.WorkersKilled++
	c.emit(KillWorker{Worker: w.id, Reason: reason})
}

// WorkerExited reports that a worker is gone (its process died, never
// started, or was killed); early: its process exited before it
// registered. Its attempts are reported crashed (the owners retry them),
// the pipelined ones too, and the pool is topped up.
func (c *Core) WorkerExited(now time.Time, id ids.WorkerID, reason string, early bool) {
	c.now = now
	w := c.workers[id]
	if w == nil {
		return
	}
	c.loseLease(w, reason)
	c.forget(w)
	c.removeIdle(w.id)
	// Every attempt it held is reported crashed, the pipelined ones too
	// (they never ran; the owner retries each within its retries).
	for _, t := range w.tasks {
		c.releaseTask(t)
		delete(c.running, t.id)
		crash := errs.ToProto(&errs.WorkerCrashedError{TaskName: t.spec.Name, TaskID: t.id.String(), Message: reason})
		c.ended(t, crash)
		c.reply(t.owner, &atollpb.TaskResult{TaskId: t.spec.TaskId, Attempt: t.spec.Attempt, Error: crash, WorkerId: w.id.Bytes()})
	}
	w.tasks = nil
	c.endLease(w)
	if len(c.workers) < c.cfg.NumWorkers && (w.binary != "" || !c.cfg.Processes) && c.binaryLive(w.binary) {
		c.topUp(w, early, reason)
	}
	c.schedule()
}

// topUp replaces a dead worker: at once, unless its process exited before
// registering — then after a backoff that doubles with each such exit in
// a row (a binary that cannot start must not be restarted in a loop),
// logged.
func (c *Core) topUp(w *worker, early bool, reason string) {
	if !early || !c.cfg.Processes {
		delete(c.earlyExits, w.binary)
		c.spawnWorker(w.binary)
		return
	}
	if c.earlyExits == nil {
		c.earlyExits = map[string]int{}
	}
	c.earlyExits[w.binary]++
	c.stats.WorkersFailedEarly++
	n := c.earlyExits[w.binary]
	delay := respawnDelay(n)
	c.cfg.Logger.Warn("raylet: a worker process exited before registering; starting another after a backoff",
		"binary", w.binary, "reason", reason, "exits_in_a_row", n, "backoff", delay)
	c.emit(ArmTimer{Timer: Timer{Kind: TimerRespawn, Binary: w.binary}, After: delay})
}

// TimerFired reports that a timer the core armed went off.
func (c *Core) TimerFired(now time.Time, t Timer) {
	c.now = now
	switch t.Kind {
	case TimerReap:
		c.reaping = false
		c.reap()
	case TimerRespawn:
		if len(c.workers) < c.cfg.NumWorkers && c.binaryLive(t.Binary) {
			c.spawnWorker(t.Binary)
			c.schedule()
		}
	}
}

// armReaper arms the reap timer while the pool is above its size.
func (c *Core) armReaper() {
	if c.reaping || len(c.workers) <= c.cfg.NumWorkers {
		return
	}
	c.reaping = true
	c.emit(ArmTimer{Timer: Timer{Kind: TimerReap}, After: c.cfg.IdleTimeout})
}

// reap stops the surplus workers idle past IdleTimeout.
func (c *Core) reap() {
	idle := make([]IdleWorker, 0, len(c.idle))
	for _, id := range c.idle {
		idle = append(idle, IdleWorker{ID: id, Since: c.workers[id].idleSince})
	}
	for _, id := range IdleToStop(c.now, idle, len(c.workers)-c.cfg.NumWorkers, c.cfg.IdleTimeout) {
		c.forget(c.workers[id])
		c.removeIdle(id)
		c.stats.WorkersReaped++
	}
	c.armReaper()
}

func (c *Core) removeIdle(id ids.WorkerID) {
	for i, x := range c.idle {
		if x == id {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return
		}
	}
}

// jobBinary is a job binary's users (Core.jobBinaries).
type jobBinary struct {
	// owners are the nodes of the owners of its tasks (not this node).
	owners map[string]struct{}
	// orphaned: the last owner left; the binary goes once no hosted
	// actor runs it either.
	orphaned bool
}

// useBinary records that a task of owner's node runs the program bin.
func (c *Core) useBinary(bin, owner string) {
	if bin == "" || bin == c.cfg.Binary {
		return
	}
	if c.jobBinaries == nil {
		c.jobBinaries = map[string]*jobBinary{}
	}
	jb := c.jobBinaries[bin]
	if jb == nil {
		jb = &jobBinary{owners: map[string]struct{}{}}
		c.jobBinaries[bin] = jb
	}
	if owner != "" && owner != c.cfg.NodeID.String() {
		jb.owners[owner] = struct{}{}
		jb.orphaned = false
	}
}

// binaryLive reports whether workers of bin may still start: the node's
// own binary, or a job binary some job uses.
func (c *Core) binaryLive(bin string) bool {
	if c.cfg.CheckBinary == nil || bin == "" || bin == c.cfg.Binary {
		return true
	}
	return c.jobBinaries[bin] != nil
}

// jobsGone drops owner's node from the users of every job binary; those
// left without users are released (releaseBinary).
func (c *Core) jobsGone(owner string) {
	for _, bin := range slices.Sorted(maps.Keys(c.jobBinaries)) {
		jb := c.jobBinaries[bin]
		if _, ok := jb.owners[owner]; !ok {
			continue
		}
		delete(jb.owners, owner)
		if len(jb.owners) == 0 {
			jb.orphaned = true
			c.releaseBinary(bin)
		}
	}
}

// releaseBinary stops the workers of an orphaned job binary that no
// hosted actor runs: idle ones are stopped, busy ones killed (their
// tasks belong to jobs that ended), and the binary is released.
func (c *Core) releaseBinary(bin string) {
	jb := c.jobBinaries[bin]
	if jb == nil || !jb.orphaned || len(jb.owners) > 0 {
		return
	}
	for _, a := range c.actors {
		if a.binary == bin {
			return // released when its host is gone (ActorTerminated)
		}
	}
	delete(c.jobBinaries, bin)
	delete(c.earlyExits, bin)
	for _, w := range slices.Clone(c.pool) {
		if w.binary != bin {
			continue
		}
		if len(w.tasks) == 0 && !w.leased() {
			c.forget(w)
			c.removeIdle(w.id)
			continue
		}
		c.stats.WorkersKilled++
		c.emit(KillWorker{Worker: w.id, Reason: "the jobs that use its binary ended"})
	}
	c.emit(ReleaseBinary{Binary: bin})
	c.cfg.Logger.Debug("raylet: released a job binary no job uses", "binary", bin)
}
