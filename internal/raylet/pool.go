package raylet

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The worker pool: starting workers, replacing dead ones (with a backoff
// for a binary whose processes exit before they register), and reaping
// the surplus idle ones.

// reapIdle is the raylet's tick to stop surplus idle workers.
type reapIdle struct{}

// respawn tops the pool up with a worker of binary after a backoff.
type respawn struct{ binary string }

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
func (r *raylet) takeIdle(ctx actor.Context, binary string) *worker {
	for i := len(r.idle) - 1; i >= 0; i-- {
		if w := r.workers[r.idle[i]]; w.binary == binary {
			r.idle = append(r.idle[:i], r.idle[i+1:]...)
			return w
		}
	}
	if len(r.workers) >= r.cfg.MaxWorkers && len(r.idle) > 0 {
		old := r.workers[r.idle[0]]
		ctx.Stop(old.pid)
		delete(r.workers, old.id)
		r.idle = r.idle[1:]
		r.cfg.OnWorkerDeath(old.id)
	}
	w := r.spawnWorker(ctx, binary)
	r.idle = r.idle[:len(r.idle)-1]
	return w
}

func (r *raylet) spawnWorker(ctx actor.Context, binary string) *worker {
	w := &worker{id: ids.NewWorkerID(), binary: binary, slot: &Slot{}}
	if r.cfg.Process != nil {
		w.slot.killAt = r.cfg.Process.KillAt
	}
	self := ctx.Self()
	props := actor.PropsFromProducer(func() actor.Actor {
		return &workerActor{id: w.id, node: r.cfg.NodeID, exec: r.cfg.Executor, raylet: self, slot: w.slot}
	})
	if r.cfg.Process != nil {
		props = actor.PropsFromProducer(r.cfg.ProcessWorkers.TaskWorker(WorkerSpec{Worker: Worker{ID: w.id, NodeID: r.cfg.NodeID},
			Config: r.processConfig(binary), Raylet: self, Slot: w.slot}))
	}
	w.pid = ctx.SpawnPrefix(r.withMiddleware(props.Configure(actor.WithDispatcher(actors.HotDispatcher))), "worker")
	r.workers[w.id] = w
	r.idle = append(r.idle, w.id)
	return w
}

// workerGone forgets a dead or killed worker: its pins and unsealed
// objects are reclaimed, its task reported as crashed (the owner retries
// it), and the pool topped up.
func (r *raylet) workerGone(ctx actor.Context, w *worker, reason string) {
	early := r.cfg.Process != nil && !w.slot.registered()
	w.slot.clear() // a result still on its way is not delivered: the crash is
	ctx.Stop(w.pid)
	delete(r.workers, w.id)
	r.removeIdle(w.id)
	r.cfg.OnWorkerDeath(w.id)
	// Every attempt it held is reported crashed, the pipelined ones too
	// (they never ran; the owner retries each within its retries).
	for _, t := range w.tasks {
		r.releaseTask(t)
		delete(r.running, t.id)
		r.timeline.add(finishedEvent(t, w.id, true))
		crash := &errs.WorkerCrashedError{TaskName: t.spec.Name, TaskID: t.id.String(), Message: reason}
		r.reply(ctx, t.owner, &atollpb.TaskResult{TaskId: t.spec.TaskId, Attempt: t.spec.Attempt, Error: errs.ToProto(crash), WorkerId: w.id.Bytes()})
	}
	w.tasks = nil
	if l := w.lease; l != nil {
		r.avail.Add(l.demand)
		if l.root {
			r.runningRoots--
		}
		w.lease = nil
	}
	if len(r.workers) < r.cfg.NumWorkers && (w.binary != "" || r.cfg.Process == nil) {
		r.topUp(ctx, w, early, reason)
	}
	r.schedule(ctx)
}

// topUp replaces a dead worker: at once, unless its process exited before
// registering — then after a backoff that doubles with each such exit in
// a row (a binary that cannot start must not be restarted in a loop),
// logged.
func (r *raylet) topUp(ctx actor.Context, w *worker, early bool, reason string) {
	if !early {
		delete(r.earlyExits, w.binary)
		r.spawnWorker(ctx, w.binary)
		return
	}
	if r.earlyExits == nil {
		r.earlyExits = map[string]int{}
	}
	r.earlyExits[w.binary]++
	r.stats.WorkersFailedEarly++
	n := r.earlyExits[w.binary]
	delay := respawnDelay(n)
	r.cfg.Logger.Warn("raylet: a worker process exited before registering; starting another after a backoff",
		"binary", w.binary, "reason", reason, "exits_in_a_row", n, "backoff", delay)
	system, self, binary := ctx.ActorSystem(), ctx.Self(), w.binary
	time.AfterFunc(delay, func() { system.Root.Send(self, &respawn{binary: binary}) })
}

// armReaper schedules a reaping tick while the pool is above its size.
func (r *raylet) armReaper(ctx actor.Context) {
	if r.reaping || len(r.workers) <= r.cfg.NumWorkers {
		return
	}
	r.reaping = true
	system, self := ctx.ActorSystem(), ctx.Self()
	time.AfterFunc(r.cfg.IdleTimeout, func() { system.Root.Send(self, &reapIdle{}) })
}

// reap stops the surplus workers idle past IdleTimeout.
func (r *raylet) reap(ctx actor.Context) {
	idle := make([]IdleWorker, 0, len(r.idle))
	for _, id := range r.idle {
		idle = append(idle, IdleWorker{ID: id, Since: r.workers[id].idleSince})
	}
	for _, id := range IdleToStop(time.Now(), idle, len(r.workers)-r.cfg.NumWorkers, r.cfg.IdleTimeout) {
		w := r.workers[id]
		ctx.Stop(w.pid)
		delete(r.workers, id)
		r.removeIdle(id)
		r.cfg.OnWorkerDeath(id)
		r.stats.WorkersReaped++
	}
	r.armReaper(ctx)
}

func (r *raylet) removeIdle(id ids.WorkerID) {
	for i, x := range r.idle {
		if x == id {
			r.idle = append(r.idle[:i], r.idle[i+1:]...)
			return
		}
	}
}
