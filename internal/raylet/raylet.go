package raylet

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// raylet is the node manager actor: the I/O shell around a Core. It turns
// messages into the Core's events (with the time they arrived) and
// performs the effects they produce (shell.go): it owns what the Core
// must not touch — the workers' actors and slots, the actor hosts and
// their supervisor, the attempts' contexts, timers, spans, the timeline
// and the callbacks of Config. All fields are owned by its goroutine.
type raylet struct {
	cfg      Config
	core     *Core
	tracer   trace.Tracer
	strategy *actorStrategy
	// workers are the pool workers the Core started and has not stopped;
	// hosts the actor hosts it spawned (byPID: by their actors' PIDs).
	workers map[ids.WorkerID]*workerHandle
	hosts   map[ids.ActorID]*hostHandle
	byPID   map[string]ids.ActorID
	// timeline remembers the last finished task attempts.
	timeline timeline
	procCfgs map[string]*ProcessConfig
	// binaries are the copies of jobs' worker binaries in binDir by
	// their SHA-256 (trust.go); ownBinDir: binDir is a temporary
	// directory of the raylet's own.
	binaries  map[[sha256.Size]byte]string
	stamps    map[string]binaryStamp
	binDir    string
	ownBinDir bool
	// holders are the submitters that asked for leases: their own tasks,
	// queued and in flight, count in the node's state.
	holders map[*Submitter]struct{}
	// deliver gives a result to its owner: through Config.Deliver if the
	// owner lives in this process, else its mailbox. Safe on any goroutine.
	deliver func(owner *actor.PID, res *atollpb.TaskResult)
}

// workerHandle is a pool worker's actor and slot.
type workerHandle struct {
	pid    *actor.PID
	slot   *Slot
	binary string
}

// hostHandle is an actor host's actor and worker.
type hostHandle struct {
	pid    *actor.PID
	worker ids.WorkerID
}

// timerFired is a Core timer going off (ArmTimer).
type timerFired struct{ timer Timer }

// NewProps returns the props of a raylet actor. The raylet supervises its
// workers and the actors it hosts.
func NewProps(cfg Config) (*actor.Props, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	strategy := newActorStrategy()
	return actor.PropsFromProducer(func() actor.Actor {
		r := &raylet{
			cfg:      cfg,
			tracer:   telemetry.Tracer(cfg.TracerProvider),
			strategy: strategy,
			workers:  map[ids.WorkerID]*workerHandle{},
			hosts:    map[ids.ActorID]*hostHandle{},
			byPID:    map[string]ids.ActorID{},
			procCfgs: map[string]*ProcessConfig{},
			holders:  map[*Submitter]struct{}{},
			timeline: timeline{cap: cfg.TimelineCap, observe: cfg.OnTaskEvent},
		}
		r.core = NewCore(r.coreConfig())
		return r
	}, actor.WithSupervisor(strategy), actor.WithDispatcher(actors.HotDispatcher)), nil
}

// coreConfig is the part of cfg the Core decides with, and its
// environment.
func (r *raylet) coreConfig() CoreConfig {
	cfg := r.cfg
	cc := CoreConfig{
		NodeID: cfg.NodeID, Resources: cfg.Resources, NumWorkers: cfg.NumWorkers, MaxWorkers: cfg.MaxWorkers,
		IdleTimeout: cfg.IdleTimeout, StoreCapacity: cfg.StoreCapacity, ArgsFraction: cfg.ArgsFraction,
		Saturation: cfg.Saturation, PipelineDepth: cfg.PipelineDepth,
		Tracer: queueTracer{r.tracer}, Logger: cfg.Logger,
	}
	if cfg.Process.InProcess == nil {
		cc.Processes, cc.Binary, cc.CheckBinary = true, cfg.Process.Binary, r.checkBinary
	}
	if cfg.Cluster != nil {
		cc.Cluster, cc.SpreadThreshold = true, cfg.Cluster.SpreadThreshold
	}
	return cc
}

// Receive implements actor.Actor: a message becomes a Core event, then
// the effects are performed.
func (r *raylet) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.strategy.setRaylet(ctx.Self())
		system, local := ctx.ActorSystem(), r.cfg.Deliver
		r.deliver = func(owner *actor.PID, res *atollpb.TaskResult) {
			if owner != nil && (local == nil || !local(owner, res)) {
				system.Root.Send(owner, res)
			}
		}
		r.core.Start(time.Now())
	case *atollpb.SubmitTask:
		r.core.Submit(time.Now(), m, ctx.Sender())
	case *taskFinished:
		r.core.Finished(time.Now(), m.worker, m.attemptID, m.result, m.delivered)
	case *recalled:
		r.core.Recalled(time.Now(), m.worker, m.attemptID, m.ok)
	case *PeerView:
		r.core.PeerView(time.Now(), m.Nodes)
	case *ForwardCall:
		if r.cfg.Cluster != nil {
			r.cfg.Cluster.CallActor(m.Node, m.Address, m.Spec, ctx.Sender())
		}
	case *atollpb.CancelTask:
		r.core.Cancel(time.Now(), m)
	case *atollpb.GeneratorAck:
		r.core.GeneratorAck(time.Now(), m, 0)
	case *atollpb.ForwardGeneratorAck:
		r.core.GeneratorAck(time.Now(), m.Ack, m.Hops)
	case *atollpb.BorrowReport:
		r.routeBorrowReport(ctx, m)
	case *atollpb.WorkerBlocked:
		r.core.Blocked(time.Now(), ids.MustFromBytes(m.TaskId), true)
	case *atollpb.WorkerUnblocked:
		r.core.Blocked(time.Now(), ids.MustFromBytes(m.TaskId), false)
	case *WorkerBlocked:
		if id, err := ids.FromBytes(m.TaskID); err == nil {
			r.core.WorkerBlocked(time.Now(), m.Worker, id, m.Blocked)
		}
	case *leaseRequest:
		r.holders[m.holder] = struct{}{}
		r.core.RequestLease(time.Now(), m.holder, m.req, m.spec)
	case *leaseCancel:
		r.core.CancelLeaseRequest(time.Now(), m.holder, m.req)
	case *leaseReturn:
		r.core.ReturnLease(time.Now(), m.worker, m.lease)
	case *leaseUse:
		r.applyUse(time.Now(), m)
	case *atollpb.KillWorker:
		r.core.KillWorker(time.Now(), m)
	case *WorkerExited:
		r.core.WorkerExited(time.Now(), m.ID, m.Reason, r.exitedEarly(m.ID))
	case *atollpb.ActorInfo:
		// Actor state changes, for callers inside worker processes.
		for _, w := range r.workers {
			ctx.Send(w.pid, m)
		}
		for _, h := range r.hosts {
			ctx.Send(h.pid, m)
		}
	case *atollpb.KillActor:
		r.core.KillActor(time.Now(), m, false)
	case *KillHostedActor:
		r.core.KillActor(time.Now(), m.Msg, true)
	case *NodeGone:
		r.core.NodeGone(time.Now(), m.Node)
	case *Drain:
		busy := r.core.Drain(time.Now(), m.IfIdle)
		if m.Reply != nil {
			m.Reply(busy)
		}
	case *ActorStarted:
		r.core.ActorStarted(time.Now(), m.ID, m.Err)
	case *actorFailed:
		r.core.ActorFailed(time.Now(), m.id, m.reason, m.restarted, m.restarts)
	case *actor.Terminated:
		if id, ok := r.byPID[m.Who.Id]; ok {
			spent, _ := r.strategy.spent(m.Who.Id)
			r.core.ActorTerminated(time.Now(), id, spent)
		}
	case *actor.Stopped:
		r.removeBinaries()
	case *timerFired:
		r.core.TimerFired(time.Now(), m.timer)
	case *BundleRequest:
		m.Reply(ApplyBundleOp(r.core, time.Now(), m.Op))
	case *GroupRemoved:
		r.core.PlacementGroupRemoved(time.Now(), m.ID, m.Reason)
	case *GetState:
		r.collectUse()
		ctx.Respond(r.state())
	case *GetTimeline:
		r.collectUse()
		ctx.Respond(r.timeline.snapshot())
	case *AddTimelineEvent:
		r.timeline.add(m.Event)
	case *AddTimelineEvents:
		for _, e := range m.Events {
			r.timeline.add(e)
		}
		if m.Recycle != nil {
			m.Recycle(m.Events)
		}
	}
	r.perform(ctx)
}

// applyUse counts a submitter's lease use and records its events.
func (r *raylet) applyUse(now time.Time, u *leaseUse) {
	for _, c := range u.counts {
		r.core.LeaseUse(now, c.worker, c.lease, c.pushed, c.finished)
	}
	for _, e := range u.events {
		r.timeline.add(e)
	}
	if u.holder != nil {
		u.holder.recycle(u.events)
	}
}

// collectUse takes the lease use the submitters gathered since they last
// reported it, and the actor calls the hosts answered, before the raylet
// tells its state or timeline.
func (r *raylet) collectUse() {
	now := time.Now()
	for h := range r.holders {
		if u := h.takeUse(); u != nil {
			r.applyUse(now, u)
		}
	}
	for _, e := range r.cfg.Workers.TakeEvents() {
		r.timeline.add(e)
	}
}

// state is the Core's state with the submitters' tasks: those queued in
// them and those in flight on the workers leased to them.
func (r *raylet) state() *State {
	st := r.core.State()
	for h := range r.holders {
		hs := h.Stats()
		st.Queued += hs.Queued
		st.Running += hs.InFlight
	}
	return st
}

// exitedEarly reports whether worker id is a process that exited before
// it registered (its replacement then waits a backoff).
func (r *raylet) exitedEarly(id ids.WorkerID) bool {
	h := r.workers[id]
	return h != nil && !h.slot.registered()
}

// withMiddleware installs Config.Middleware on props of a child.
func (r *raylet) withMiddleware(props *actor.Props) *actor.Props {
	if len(r.cfg.Middleware) == 0 {
		return props
	}
	return props.Clone(actor.WithReceiverMiddleware(r.cfg.Middleware...))
}

// processConfig is the worker configuration for binary.
func (r *raylet) processConfig(binary string) *ProcessConfig {
	if binary == r.cfg.Process.Binary || r.cfg.Process.InProcess != nil {
		return r.cfg.Process
	}
	if pc := r.procCfgs[binary]; pc != nil {
		return pc
	}
	pc := *r.cfg.Process
	pc.Binary, pc.Args = binary, []string{}
	r.procCfgs[binary] = &pc
	return &pc
}

// GetState asks a raylet for a snapshot of its state (for status and tests).
type GetState struct{}

// WorkerBlocked tells the raylet that the task with id TaskID, running on
// Worker, blocked in Get (Blocked) or resumed: sent by the worker's proxy,
// which knows the worker (a task pushed by a submitter is not the Core's
// to find by its id alone).
type WorkerBlocked struct {
	Worker  ids.WorkerID
	TaskID  []byte
	Blocked bool
}

// BundleRequest is a step of a placement group's two-phase commit on this
// node (atollpb.BundleOp): the raylet applies it to its Core and calls
// Reply with the outcome (on its goroutine: Reply must not block).
type BundleRequest struct {
	Op    *atollpb.BundleOp
	Reply func(*atollpb.BundleOpReply)
}

// GroupRemoved tells the raylet a placement group was removed: its tasks
// waiting here fail, and so do those submitted later.
type GroupRemoved struct {
	ID     ids.ID16
	Reason string
}

// ApplyBundleOp applies a step of a placement group's two-phase commit
// (atollpb.BundleOp) to c and returns the answer for the placement
// manager: a PREPARE that asks to commit at once (a transaction on one
// node) commits too.
func ApplyBundleOp(c *Core, now time.Time, op *atollpb.BundleOp) *atollpb.BundleOpReply {
	reply := &atollpb.BundleOpReply{Txn: op.GetTxn()}
	var err error
	switch op.GetKind() {
	case atollpb.BundleOp_PREPARE:
		reply.Refused, err = c.PrepareBundles(now, op.GetBundles())
		if reply.Refused == "" && err == nil && op.GetCommit() {
			reply.Refused, err = c.CommitBundles(now, op.GetBundles())
		}
	case atollpb.BundleOp_COMMIT:
		reply.Refused, err = c.CommitBundles(now, op.GetBundles())
	case atollpb.BundleOp_RELEASE:
		err = c.ReleaseBundles(now, op.GetBundles(), op.GetReason())
	default:
		err = errs.Invalidf("bundles: unknown operation %d", op.GetKind())
	}
	if err != nil {
		reply.Error = errs.ToProto(err)
	}
	return reply
}

// Stats counts what a raylet did.
type Stats struct {
	Submitted, Dispatched, Finished, WorkersKilled, WorkersReaped, ActorRestarts uint64
	// WorkersFailedEarly counts worker processes that exited before they
	// registered (each restarted after a backoff).
	WorkersFailedEarly uint64
	// Forwarded counts tasks placed on other nodes; SpilledBack those of
	// them that had queued here first.
	Forwarded, SpilledBack uint64
	// Recalls counts recalls of pipelined attempts asked of workers,
	// Recalled those given back unstarted.
	Recalls, Recalled uint64
	// LeaseRequests counts the leases submitters asked for,
	// LeasesGranted, LeasesReturned and LeaseRecalls what became of
	// them (core_lease.go).
	LeaseRequests, LeasesGranted, LeasesReturned, LeaseRecalls uint64
}

// State is a snapshot of a raylet.
type State struct {
	NodeID      ids.NodeID
	Total       Resources
	Available   Resources
	Queued      int
	QueuedCPU   float64
	Running     int
	Workers     int
	IdleWorkers int
	Actors      int
	// Leased counts the workers leased to submitters, LeaseRequests their
	// requests queued (not counted in Queued). The raylet's actor adds
	// the submitters' own tasks, queued and in flight, to Queued and
	// Running (the Core does not see them).
	Leased, LeaseRequests int
	Draining              bool
	Stats                 Stats
	// Bundles are the placement groups' bundles the node holds; Demands
	// the shapes of the work it cannot start yet (Core.Demands).
	Bundles []*atollpb.BundleHeld
	Demands []*atollpb.ResourceDemand
}

// String renders the state for logs.
func (s *State) String() string {
	return fmt.Sprintf("node %s: %d queued, %d running, %d/%d workers idle, %d actors, available %v of %v",
		s.NodeID.Short(), s.Queued, s.Running, s.IdleWorkers, s.Workers, s.Actors, s.Available, s.Total)
}
