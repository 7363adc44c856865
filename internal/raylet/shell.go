package raylet

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// The shell's half of the effects: what each one does to the world.
// Workers, processes or in-process alike, are the actors Config.Workers
// makes; an attempt reaches one through its Slot.

// perform applies the Core's effects in order until it has none (an
// effect may step the Core again: KillWorker reports the exit).
func (r *raylet) perform(ctx actor.Context) {
	for {
		effects := r.core.Effects()
		if len(effects) == 0 {
			return
		}
		for _, e := range effects {
			r.apply(ctx, e)
		}
	}
}

func (r *raylet) apply(ctx actor.Context, e Effect) {
	switch e := e.(type) {
	case Push:
		r.push(ctx, e)
	case Done:
		a := e.Attempt
		a.cancel(nil)
		r.timeline.add(finishedEvent(a))
	case Returned:
		e.Attempt.cancel(nil)
	case Reply:
		ctx.Send(e.Owner, e.Result)
	case Recall:
		r.recall(ctx, e.Attempt)
	case Cancel:
		e.Attempt.cancel(errs.CancelCause(e.NonRecursive))
	case StartWorker:
		r.startWorker(ctx, e)
	case StopWorker:
		r.stopWorker(ctx, e.Worker)
	case KillWorker:
		r.core.WorkerExited(time.Now(), e.Worker, e.Reason, r.exitedEarly(e.Worker))
	case ArmTimer:
		system, self, timer := ctx.ActorSystem(), ctx.Self(), e.Timer
		time.AfterFunc(e.After, func() { system.Root.Send(self, &timerFired{timer: timer}) })
	case Forward:
		if !e.SpilledBack {
			_, span := r.tracer.Start(telemetry.Extract(context.Background(), e.Spec.Trace), "forward "+e.Spec.Name,
				trace.WithAttributes(attribute.String("atoll.task_id", ids.MustFromBytes(e.Spec.TaskId).String()), attribute.String("atoll.node_id", r.cfg.NodeID.String()),
					attribute.String("atoll.target_node_id", e.Node.String()), attribute.Int("atoll.hops", int(e.Hops))))
			span.End()
		}
		r.cfg.Cluster.Forward(e.Node, e.Spec, e.Owner, e.Hops)
	case CancelForwarded:
		r.cfg.Cluster.Cancel(e.Task, e.NonRecursive)
	case AckGenerator:
		if h := r.workers[e.Worker]; h != nil {
			h.slot.send(&atollpb.Frame{Body: &atollpb.Frame_GeneratorAck{GeneratorAck: e.Ack}})
		}
	case ForwardGeneratorAck:
		if r.cfg.Cluster.GeneratorAck != nil {
			r.cfg.Cluster.GeneratorAck(e.Ack, e.Hops)
		}
	case KillRemoteActor:
		r.cfg.Cluster.KillActor(e.Msg)
	case SpawnHost:
		r.spawnHost(ctx, e)
	case StopHost:
		if h := r.hosts[e.Actor]; h != nil {
			ctx.Stop(h.pid)
		}
	case CrashHost:
		if h := r.hosts[e.Actor]; h != nil {
			ctx.Send(h.pid, &CrashActor{Reason: e.Reason})
		}
	case HostGone:
		if h := r.hosts[e.Actor]; h != nil {
			delete(r.hosts, e.Actor)
			delete(r.byPID, h.pid.Id)
			r.strategy.remove(h.pid.Id)
		}
		r.cfg.OnWorkerDeath(e.Worker)
	case ReportActor:
		r.cfg.ReportActor(e.Info)
	case ReleaseBinary:
		r.releaseBinary(e.Binary)
	case Grant:
		if h := r.workers[e.Worker]; h != nil {
			e.Holder.(*Submitter).granted(e.Request, e.Lease, e.Worker, h.slot)
		}
	case RecallLease:
		e.Holder.(*Submitter).recallLease(e.Lease)
	case LeaseBlocked:
		e.Holder.(*Submitter).leaseBlocked(e.Lease, e.Blocked)
	case LeaseLost:
		var slot *Slot
		if h := r.workers[e.Worker]; h != nil {
			slot = h.slot
		}
		e.Holder.(*Submitter).lost(e.Lease, slot, e.Reason)
	case LeaseRefused:
		e.Holder.(*Submitter).refused(e.Request, e.Err)
	}
}

// push gives each attempt its context and hands them to the worker's
// slot, which writes them to the worker in one frame batch.
func (r *raylet) push(ctx actor.Context, e Push) {
	h := r.workers[e.Worker]
	for i, a := range e.Attempts {
		a.ctx, a.cancel = context.WithCancelCause(context.Background())
		a.deliver = r.deliver
		_, sched := r.tracer.Start(telemetry.Extract(context.Background(), a.spec.Trace), "schedule "+a.spec.Name,
			trace.WithAttributes(attribute.String("atoll.task_id", a.task.String()),
				attribute.String("atoll.worker_id", a.worker.String()), attribute.String("atoll.node_id", r.cfg.NodeID.String()),
				attribute.Int("atoll.pipelined", e.Before+i)))
		sched.End()
	}
	h.slot.assign(e.Attempts...)
}

// recall asks the worker holding a to give it back; the answer is posted
// to the raylet (recalled).
func (r *raylet) recall(ctx actor.Context, a *Assignment) {
	h := r.workers[a.worker]
	if h == nil {
		return
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	wid, attemptID := a.worker, a.attemptID
	h.slot.recall(a, func(ok bool) {
		system.Root.Send(self, &recalled{worker: wid, attemptID: attemptID, ok: ok})
	})
}

// startWorker spawns a pool worker's actor (Config.Workers).
func (r *raylet) startWorker(ctx actor.Context, e StartWorker) {
	h := &workerHandle{slot: &Slot{killAt: r.cfg.Process.KillAt}, binary: e.Binary}
	props := actor.PropsFromProducer(r.cfg.Workers.TaskWorker(WorkerSpec{Worker: Worker{ID: e.Worker, NodeID: r.cfg.NodeID},
		Config: r.processConfig(e.Binary), Raylet: ctx.Self(), Slot: h.slot}))
	h.pid = ctx.SpawnPrefix(r.withMiddleware(props.Configure(actor.WithDispatcher(actors.HotDispatcher))), "worker")
	r.workers[e.Worker] = h
}

// stopWorker stops a worker the Core forgot: a result still on its way is
// not delivered (the Core reported its attempts), and the store reclaims
// its pins and unsealed objects.
func (r *raylet) stopWorker(ctx actor.Context, id ids.WorkerID) {
	h := r.workers[id]
	if h == nil {
		return
	}
	for _, a := range h.slot.clear() {
		a.direct.crashed(a, "its worker stopped")
	}
	ctx.Stop(h.pid)
	delete(r.workers, id)
	r.cfg.OnWorkerDeath(id)
}

// spawnHost spawns an actor's host under the raylet's supervisor
// strategy and tells the Core its address.
func (r *raylet) spawnHost(ctx actor.Context, e SpawnHost) {
	w := Worker{ID: e.Worker, NodeID: r.cfg.NodeID}
	spec, id := e.Spec, e.Actor
	props := actor.PropsFromProducer(r.cfg.Workers.ActorHost(HostSpec{Actor: id, Spec: spec, Worker: w,
		Config: r.processConfig(e.Binary), Raylet: ctx.Self(), Deliver: r.deliver, PipelineDepth: ActorPipelineDepth(r.cfg.PipelineDepth)}))
	pid := ctx.SpawnPrefix(r.withMiddleware(props.Configure(actor.WithDispatcher(actors.HotDispatcher))), "actor")
	r.strategy.add(pid.Id, id, int(spec.GetActorCreation().GetMaxRestarts()), int(spec.GetActorCreation().GetNumRestarts()))
	r.hosts[id] = &hostHandle{pid: pid, worker: e.Worker}
	r.byPID[pid.Id] = id
	r.core.HostSpawned(id, pid.Id)
}

// queueTracer starts the queue spans of the Core's tasks.
type queueTracer struct{ tracer trace.Tracer }

func (q queueTracer) Queued(spec *atollpb.TaskSpec, id ids.TaskID, recalled bool) trace.Span {
	attrs := trace.WithAttributes(attribute.String("atoll.task_id", id.String()), attribute.Int("atoll.attempt", int(spec.Attempt)))
	if recalled {
		attrs = trace.WithAttributes(attribute.String("atoll.task_id", id.String()), attribute.Int("atoll.attempt", int(spec.Attempt)),
			attribute.Bool("atoll.recalled", true))
	}
	_, span := q.tracer.Start(telemetry.Extract(context.Background(), spec.Trace), "queue "+spec.Name, attrs)
	return span
}

// recalled is a worker's answer to a Recall (Core.Recalled).
type recalled struct {
	worker    ids.WorkerID
	attemptID uint64
	ok        bool
}
