package raylet

import (
	"context"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// hostedActor is the raylet's record of an actor it hosts.
type hostedActor struct {
	id       ids.ActorID
	worker   ids.WorkerID
	spec     *atollpb.TaskSpec
	owner    *actor.PID
	pid      *actor.PID
	demand   Resources
	restarts int
	created  bool
	cause    *atollpb.ErrorInfo
}

func (a *hostedActor) info(node ids.NodeID, state atollpb.ActorState, qualify bool) *atollpb.ActorInfo {
	c := a.spec.GetActorCreation()
	info := &atollpb.ActorInfo{
		ActorId: a.id.Bytes(), Name: c.GetName(), ActorType: c.GetActorType(), State: state,
		NumRestarts: int32(a.restarts), MaxRestarts: c.GetMaxRestarts(), NodeId: node.Bytes(),
		OwnerId: a.spec.OwnerId, JobId: a.spec.JobId, Namespace: c.GetNamespace(),
	}
	if a.pid != nil {
		info.Address = a.pid.Id
		if qualify {
			info.Address = node.String() + "/" + a.pid.Id
		}
	}
	if state == atollpb.ActorState_ACTOR_DEAD {
		info.DeathCause = a.cause
	}
	return info
}

// actorFailed reports a supervision decision about a crashed actor.
type actorFailed struct {
	id        ids.ActorID
	reason    any
	restarted bool
	restarts  int
}

func (r *raylet) startActor(ctx actor.Context, t *task) {
	a := &hostedActor{
		id: ids.MustFromBytes(t.spec.ActorId), worker: ids.NewWorkerID(), spec: t.spec,
		owner: t.owner, demand: t.demand,
	}
	w := Worker{ID: a.worker, NodeID: r.cfg.NodeID}
	exec, raylet, deliver := r.cfg.Executor, ctx.Self(), r.deliver
	props := actor.PropsFromProducer(func() actor.Actor {
		return &actorHost{id: a.id, spec: t.spec, worker: w, exec: exec, raylet: raylet, deliver: deliver}
	})
	if r.cfg.Process != nil {
		props = actor.PropsFromProducer(r.cfg.ProcessWorkers.ActorHost(HostSpec{Actor: a.id, Spec: t.spec, Worker: w,
			Config: r.processConfig(r.binaryFor(t.spec)), Raylet: raylet, Deliver: deliver, PipelineDepth: r.cfg.PipelineDepth}))
	}
	a.pid = ctx.SpawnPrefix(r.withMiddleware(props.Configure(actor.WithDispatcher(actors.HotDispatcher))), "actor")
	r.strategy.add(a.pid.Id, a.id, int(t.spec.GetActorCreation().GetMaxRestarts()))
	r.actors[a.id] = a
	r.byPID[a.pid.Id] = a.id
}

func (r *raylet) actorStarted(ctx actor.Context, m *ActorStarted) {
	a := r.actors[m.ID]
	if a == nil {
		return
	}
	if m.Err != nil {
		a.cause = errs.ToProto(&errs.ActorDiedError{ActorID: a.id.String(), Name: a.spec.GetActorCreation().GetName(),
			Message: "constructor failed: " + m.Err.Error()})
		ctx.Stop(a.pid) // actorTerminated reports the death
		return
	}
	if !a.created {
		a.created = true
		r.reply(ctx, a.owner, &atollpb.TaskResult{TaskId: a.spec.TaskId, Attempt: a.spec.Attempt,
			ActorAddress: r.actorAddress(a.pid), WorkerId: a.worker.Bytes()})
	}
	r.cfg.ReportActor(a.info(r.cfg.NodeID, atollpb.ActorState_ACTOR_ALIVE, r.cfg.Cluster != nil))
}

func (r *raylet) actorFailed(m *actorFailed) {
	a := r.actors[m.id]
	if a == nil {
		return
	}
	a.restarts = m.restarts
	if m.restarted {
		r.stats.ActorRestarts++
		r.cfg.ReportActor(a.info(r.cfg.NodeID, atollpb.ActorState_ACTOR_RESTARTING, r.cfg.Cluster != nil))
		return
	}
	a.cause = errs.ToProto(&errs.ActorDiedError{ActorID: a.id.String(), Name: a.spec.GetActorCreation().GetName(),
		Message: fmt.Sprintf("max_restarts (%d) exhausted; last failure: %v", a.spec.GetActorCreation().GetMaxRestarts(), m.reason)})
}

func (r *raylet) actorTerminated(ctx actor.Context, id ids.ActorID) {
	a := r.actors[id]
	if a == nil {
		return
	}
	delete(r.actors, id)
	delete(r.byPID, a.pid.Id)
	if reason, ok := r.strategy.spent(a.pid.Id); ok && a.cause == nil {
		a.cause = errs.ToProto(&errs.ActorDiedError{ActorID: a.id.String(), Name: a.spec.GetActorCreation().GetName(),
			Message: fmt.Sprintf("max_restarts (%d) exhausted; last failure: %v", a.spec.GetActorCreation().GetMaxRestarts(), reason)})
	}
	r.strategy.remove(a.pid.Id)
	r.avail.Add(a.demand)
	r.cfg.OnWorkerDeath(a.worker)
	if a.cause == nil {
		a.cause = errs.ToProto(&errs.ActorDiedError{ActorID: id.String(), Name: a.spec.GetActorCreation().GetName(), Message: "actor stopped"})
	}
	if !a.created {
		r.reply(ctx, a.owner, &atollpb.TaskResult{TaskId: a.spec.TaskId, Attempt: a.spec.Attempt, Error: a.cause})
	}
	r.cfg.ReportActor(a.info(r.cfg.NodeID, atollpb.ActorState_ACTOR_DEAD, r.cfg.Cluster != nil))
	r.schedule(ctx)
}

func (r *raylet) killActor(ctx actor.Context, m *atollpb.KillActor, local bool) {
	a := r.actors[ids.MustFromBytes(m.ActorId)]
	if a == nil {
		if !local && r.cfg.Cluster != nil {
			r.cfg.Cluster.KillActor(m) // hosted on another node
		}
		return
	}
	reason := m.Reason
	if reason == "" {
		reason = "killed"
	}
	if !m.NoRestart {
		r.crashActor(ctx, a, reason)
		return
	}
	if a.cause != nil {
		return // already being stopped: the first cause stands
	}
	a.cause = errs.ToProto(&errs.ActorDiedError{ActorID: a.id.String(), Name: a.spec.GetActorCreation().GetName(), Message: reason})
	ctx.Stop(a.pid)
}

func (r *raylet) crashActor(ctx actor.Context, a *hostedActor, reason string) {
	ctx.Send(a.pid, &CrashActor{Reason: reason})
}

// actorHost runs one actor instance. Method calls run one at a time, in
// mailbox order, on the host's goroutine. A panicking method (or an
// injected crash) fails the host, and the raylet's supervisor strategy
// restarts it (the constructor runs again) within the actor's budget.
type actorHost struct {
	id       ids.ActorID
	spec     *atollpb.TaskSpec
	worker   Worker
	exec     Executor
	raylet   *actor.PID
	instance any
	cancel   context.CancelFunc
	runCtx   context.Context
	// deliver gives a call's result to its caller (see raylet.deliver).
	deliver func(caller *actor.PID, res *atollpb.TaskResult)
}

func (h *actorHost) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.runCtx, h.cancel = context.WithCancel(context.Background())
		inst, err := h.exec.NewActor(h.runCtx, h.worker, h.spec)
		// On error the raylet records the cause, then stops this host
		// (stopping itself, the Terminated notice would overtake the cause).
		ctx.Send(h.raylet, &ActorStarted{ID: h.id, Err: err})
		h.instance = inst
	case *atollpb.PushTask:
		if h.instance == nil {
			died := &errs.ActorDiedError{ActorID: h.id.String(), Name: h.spec.GetActorCreation().GetName(), Message: "actor is not running"}
			ctx.Respond(&atollpb.TaskResult{TaskId: m.Spec.TaskId, Attempt: m.Spec.Attempt, Error: errs.ToProto(died)})
			return
		}
		res, panicked := h.exec.RunActorTask(h.runCtx, h.worker, h.instance, m.Spec)
		h.deliver(ctx.Sender(), res)
		if panicked {
			h.instance = nil
			panic(fmt.Sprintf("actor %s: method %s panicked: %s", h.id.Short(), m.Spec.Function, res.GetError().GetMessage()))
		}
	case *CrashActor:
		h.instance = nil
		panic("actor " + h.id.Short() + " crashed: " + m.Reason)
	case *actor.Restarting, *actor.Stopping:
		if h.cancel != nil {
			h.cancel()
		}
	}
}

// actorStrategy supervises the raylet's children: pool workers always
// restart; an actor host restarts at most its max_restarts over its whole
// life (-1: without limit), as Ray counts restarts, then stops.
type actorStrategy struct {
	mu     sync.Mutex
	raylet *actor.PID
	budget map[string]*restartBudget
}

type restartBudget struct {
	actor ids.ActorID
	max   int
	used  int
	// spent is the last failure once the budget ran out. It is recorded
	// here, synchronously, because the Terminated notice (a system
	// message) overtakes the actorFailed message in the raylet's mailbox.
	spent any
}

// spent returns the failure that exhausted pid's budget, if any.
func (s *actorStrategy) spent(pid string) (reason any, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.budget[pid]; b != nil && b.spent != nil {
		return b.spent, true
	}
	return nil, false
}

func newActorStrategy() *actorStrategy {
	return &actorStrategy{budget: map[string]*restartBudget{}}
}

func (s *actorStrategy) setRaylet(pid *actor.PID) {
	s.mu.Lock()
	s.raylet = pid
	s.mu.Unlock()
}

func (s *actorStrategy) add(pid string, id ids.ActorID, max int) {
	s.mu.Lock()
	s.budget[pid] = &restartBudget{actor: id, max: max}
	s.mu.Unlock()
}

func (s *actorStrategy) remove(pid string) {
	s.mu.Lock()
	delete(s.budget, pid)
	s.mu.Unlock()
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *actorStrategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason any, _ any) {
	s.mu.Lock()
	b, raylet := s.budget[child.Id], s.raylet
	restart := b == nil || b.max < 0 || b.used < b.max
	var failed *actorFailed
	if b != nil {
		if restart {
			b.used++
		} else {
			b.spent = fmt.Sprint(reason)
		}
		failed = &actorFailed{id: b.actor, reason: reason, restarted: restart, restarts: b.used}
	}
	s.mu.Unlock()
	if failed != nil && raylet != nil {
		system.Root.Send(raylet, failed)
	}
	if restart {
		sup.RestartChildren(child)
	} else {
		sup.StopChildren(child)
	}
}
