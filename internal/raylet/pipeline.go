package raylet

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// Pipelining: a worker leased to a scheduling class holds up to
// Config.PipelineDepth of its tasks (fillPipelines), and gives back those
// it has not started when they would wait behind a blocked task, when
// another worker is idle, or when another class waits (recalls).

// fillPipelines pushes more of the one queued class's tasks to the
// workers leased to it, up to the pipeline depth each. A worker is topped
// up once its pipeline is down to half the depth, several tasks in one
// write, and the queue is shared evenly among the workers that have
// room. Only while no other class waits (that one may need a worker
// first: consumers go before roots), only workers whose running task is
// not blocked, and only tasks whose arguments fit under the admission
// cap.
func (r *raylet) fillPipelines(ctx actor.Context) {
	depth := r.cfg.PipelineDepth
	if depth <= 1 || r.queued == 0 {
		return
	}
	var cq *classQueue
	for _, c := range r.classes {
		if len(c.tasks) > 0 {
			if cq != nil {
				return
			}
			cq = c
		}
	}
	if cq == nil || cq.noSlot {
		return
	}
	low := max(1, depth/2)
	var open []*worker
	for _, w := range r.workers {
		if w.lease != nil && w.lease.key == cq.key && len(w.tasks) > 0 && len(w.tasks) <= low && !w.tasks[0].blocked &&
			w.binary == r.binaryFor(cq.tasks[0].spec) {
			open = append(open, w)
		}
	}
	slices.SortFunc(open, func(a, b *worker) int { return cmp.Compare(len(a.tasks), len(b.tasks)) })
	for i, w := range open {
		share := (len(cq.tasks) + len(open) - i - 1) / (len(open) - i) // an even split of what is left
		n := min(depth-len(w.tasks), share)
		batch := make([]*Assignment, 0, n)
		for len(batch) < n && len(cq.tasks) > 0 {
			t := cq.tasks[0]
			if w.binary != r.binaryFor(t.spec) || !r.admits(t) {
				break
			}
			cq.tasks[0] = nil
			cq.tasks = cq.tasks[1:]
			r.queued--
			batch = append(batch, r.prepare(w, t)) // held: the next is admitted against it
		}
		if len(batch) > 0 {
			r.push(ctx, w, batch)
		}
	}
	if len(cq.tasks) == 0 {
		delete(r.classes, cq.key)
	}
}

// recalled reports the answer to a recall of a pipelined attempt.
type recalled struct {
	worker    ids.WorkerID
	attemptID uint64
	ok        bool
}

// recallFollowers asks w's process to give back the attempts it holds
// and has not started: they are queued here again (work stealing; a
// blocked task's followers).
func (r *raylet) recallFollowers(ctx actor.Context, w *worker) {
	if len(w.tasks) < 2 {
		return
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	for _, t := range w.tasks[1:] {
		if t.recalling {
			continue
		}
		t.recalling = true
		r.stats.Recalls++
		wid, attemptID := w.id, t.attemptID
		w.slot.recall(t.assigned, func(ok bool) {
			system.Root.Send(self, &recalled{worker: wid, attemptID: attemptID, ok: ok})
		})
	}
}

// takeBack queues again an attempt its worker gave back unstarted (or
// fails it, if it was cancelled meanwhile).
func (r *raylet) takeBack(ctx actor.Context, m *recalled) {
	w := r.workers[m.worker]
	if w == nil {
		return // it died: its death reported the attempt
	}
	i := slices.IndexFunc(w.tasks, func(t *task) bool { return t.attemptID == m.attemptID })
	if i < 0 {
		return
	}
	t := w.tasks[i]
	t.recalling = false
	if !m.ok {
		return // it started: its result will come
	}
	w.tasks = slices.Delete(w.tasks, i, i+1)
	cancelled := t.assigned.ctx.Err() != nil
	r.releaseTask(t)
	delete(r.running, t.id)
	r.stats.Recalled++
	if len(w.tasks) == 0 {
		r.leaseEnded(ctx, w)
	}
	if cancelled { // while it waited in the worker
		err := &errs.CancelledError{TaskName: t.spec.Name, TaskID: t.id.String()}
		r.reply(ctx, t.owner, &atollpb.TaskResult{TaskId: t.spec.TaskId, Attempt: t.spec.Attempt, Error: errs.ToProto(err)})
		r.schedule(ctx)
		return
	}
	t.assigned, t.worker = nil, ids.WorkerID{}
	_, t.queueSpan = r.tracer.Start(telemetry.Extract(context.Background(), t.spec.Trace), "queue "+t.spec.Name,
		trace.WithAttributes(attribute.String("atoll.task_id", t.id.String()), attribute.Int("atoll.attempt", int(t.spec.Attempt)),
			attribute.Bool("atoll.recalled", true)))
	cq := r.classes[t.class.key]
	if cq == nil {
		cq = t.class
		cq.tasks = cq.tasks[:0]
		r.classes[cq.key] = cq
	}
	t.class = cq
	at, _ := slices.BinarySearchFunc(cq.tasks, t.seq, func(x *task, seq uint64) int { return cmp.Compare(x.seq, seq) })
	cq.tasks = slices.Insert(cq.tasks, at, t)
	r.queued++
	r.schedule(ctx)
}

// leaseEnded makes a worker that has no task left idle and gives its
// lease's resources back.
func (r *raylet) leaseEnded(ctx actor.Context, w *worker) {
	if l := w.lease; l != nil {
		r.avail.Add(l.demand)
		if l.root {
			r.runningRoots--
		}
		w.lease = nil
	}
	w.idleSince = time.Now()
	r.idle = append(r.idle, w.id)
	r.armReaper(ctx)
}

// steal recalls the waiting attempts of the longest pipeline when a
// worker is idle and nothing is queued: they run sooner on the idle one.
func (r *raylet) steal(ctx actor.Context) {
	if r.queued > 0 || len(r.idle) == 0 || r.cfg.PipelineDepth <= 1 {
		return
	}
	var from *worker
	for _, w := range r.workers {
		if len(w.tasks) > 1 && (from == nil || len(w.tasks) > len(from.tasks)) {
			from = w
		}
	}
	if from != nil {
		r.recallFollowers(ctx, from)
	}
}

// recallForOthers takes back the pipelined attempts of workers leased to
// other classes while some class waits for a worker or resources:
// pipelining must not let one class keep the workers from another (nor
// roots from the consumers that go first).
func (r *raylet) recallForOthers(ctx actor.Context) {
	if r.queued == 0 || r.cfg.PipelineDepth <= 1 {
		return
	}
	waiting := map[string]bool{}
	for key, cq := range r.classes {
		if len(cq.tasks) > 0 && (cq.reason == PendingResources || cq.reason == PendingWorker || cq.reason == PendingRootQueued) {
			waiting[key] = true
		}
	}
	if len(waiting) == 0 {
		return
	}
	for _, w := range r.workers {
		if len(w.tasks) > 1 && w.lease != nil && !(len(waiting) == 1 && waiting[w.lease.key]) {
			r.recallFollowers(ctx, w)
		}
	}
}
