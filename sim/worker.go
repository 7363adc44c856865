package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// slot is a pool worker: a process (its runtime.Worker) holding the
// attempts its raylet pushed, in order (pipelining). The first runs on a
// thread of the process: the runtime's executor resolves its arguments
// (pulling those held elsewhere), calls the registered function and
// stores its outputs, exactly as in a worker process. Its result goes to
// the raylet after the task's simulated running time; then the next
// attempt starts. A recall gives back an attempt that has not started;
// a cancel cancels the running attempt's context (or ends a queued one).
type slot struct {
	n     *node
	id    ids.WorkerID
	p     *proc
	queue []*raylet.Assignment
	// running is the attempt that began, if any, and cancel cancels its
	// context.
	running *raylet.Assignment
	cancelR context.CancelCauseFunc
}

// startWorker starts a pool worker (its process ready at once).
func (n *node) startWorker(id ids.WorkerID) {
	w := n.w
	p := w.newProc(n, fmt.Sprintf("%s.w%s", n.name, id.Short()), "worker", id)
	n.workers[id] = &slot{n: n, id: id, p: p}
	w.log.add("%s start worker %s", n.name, p.name)
}

// stopWorker stops a worker the raylet forgot: its process ends quietly,
// the store and the cluster reclaim what it held.
func (n *node) stopWorker(id ids.WorkerID) {
	s := n.workers[id]
	if s == nil {
		return
	}
	delete(n.workers, id)
	s.p.die("stopped by its raylet")
	n.workerGone(id)
}

// crashWorker kills a worker's process (a fault): its raylet sees it
// exit.
func (n *node) crashWorker(s *slot, why string) {
	if !s.p.alive {
		return
	}
	s.p.die(why)
	n.rayletSend(n.name, "WorkerExited", "raylet", s.p.name, func() {
		n.raylet.WorkerExited(n.now(), s.id, why, false)
		n.rayletEffects()
	})
}

// pushed appends the attempts the raylet pushed and starts the first.
func (s *slot) pushed(as []*raylet.Assignment) {
	s.queue = append(s.queue, as...)
	s.advance()
}

// advance starts the first attempt if none runs.
func (s *slot) advance() {
	if s.running != nil || len(s.queue) == 0 || !s.p.alive {
		return
	}
	a := s.queue[0]
	s.queue = s.queue[1:]
	s.running = a
	w := s.n.w
	spec := a.Spec()
	if name, ok := w.faults.killAt("before-execute", s.n); ok {
		s.n.crashWorker(s, "fault "+name+" (before-execute)")
		return
	}
	w.check.executed(spec, s.p.name)
	// The attempt's context: its thread's (cancelled if the process
	// dies), cancelled on its own by a cancel.
	var ctx context.Context
	var cancel context.CancelCauseFunc
	t := w.spawn(s.p, s.p.name+" runs "+attempt(spec), func(context.Context) {
		before, after := w.taskTime()
		w.sleep(before)
		res := s.p.wk.RunTask(ctx, spec)
		if name, ok := w.faults.killAt("after-execute", s.n); ok {
			s.n.crashWorker(s, "fault "+name+" (after-execute)")
			return
		}
		w.sleep(after)
		cancel(nil)
		s.finish(a, res)
	})
	ctx, cancel = context.WithCancelCause(t.ctx)
	s.cancelR = cancel
}

// finish sends an attempt's result to the raylet and starts the next.
func (s *slot) finish(a *raylet.Assignment, res *atollpb.TaskResult) {
	n := s.n
	if !s.p.alive {
		return
	}
	if s.running == a {
		s.running, s.cancelR = nil, nil
	}
	id, attemptID := s.id, a.ID()
	n.w.send(&msg{from: n, to: n, fromName: s.p.name, toName: n.name, path: pathLocal, kind: "TaskResult", actor: "raylet", desc: result(res), deliver: func() {
		n.raylet.Finished(n.now(), id, attemptID, res, false)
		n.rayletEffects()
	}})
	s.advance()
}

// recall gives back an attempt that has not begun.
func (s *slot) recall(a *raylet.Assignment) {
	n := s.n
	ok := false
	for i, q := range s.queue {
		if q.ID() == a.ID() {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			ok = true
			break
		}
	}
	id, attemptID := s.id, a.ID()
	n.w.send(&msg{from: n, to: n, fromName: s.p.name, toName: n.name, path: pathLocal, kind: "Recalled", actor: "raylet", desc: fmt.Sprintf("%s %v", attempt(a.Spec()), ok),
		deliver: func() {
			n.raylet.Recalled(n.now(), id, attemptID, ok)
			n.rayletEffects()
		}})
}

// cancel cancels an attempt: the running one's context, or a queued one
// at once.
func (s *slot) cancel(a *raylet.Assignment, nonRecursive bool) {
	if s.running != nil && s.running.ID() == a.ID() {
		if s.cancelR != nil {
			s.cancelR(errs.CancelCause(nonRecursive))
		}
		return
	}
	for i, q := range s.queue {
		if q.ID() == a.ID() {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			spec := a.Spec()
			cancelled := &errs.CancelledError{TaskName: spec.Name, TaskID: ids.MustFromBytes(spec.TaskId).String()}
			s.finish(a, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, WorkerId: s.id.Bytes(), Error: errs.ToProto(cancelled)})
			return
		}
	}
}

// taskTime draws how long an attempt runs in simulated time, before and
// after its function returns (a crash in the second part loses a result
// whose side effects happened).
func (w *World) taskTime() (before, after time.Duration) {
	d := w.cfg.TaskTime
	if d <= 0 {
		return 0, 0
	}
	t := time.Duration(w.rWork.Int64N(int64(d)))
	before = time.Duration(w.rWork.Int64N(int64(t) + 1))
	return before, t - before
}
