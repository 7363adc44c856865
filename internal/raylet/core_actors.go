package raylet

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Hosted actors: each runs in a worker of its own (an actor host the
// shell spawns and supervises within the actor's max_restarts), holding
// its creation task's resources for its whole life. The core keeps their
// bookkeeping: the creation's answer, restarts, the cause of death and
// the states reported to the GCS.

// hostedActor is the core's record of an actor it hosts.
type hostedActor struct {
	id       ids.ActorID
	worker   ids.WorkerID
	spec     *atollpb.TaskSpec
	binary   string // the program of its worker
	owner    *actor.PID
	address  string // the host's local address (HostSpawned)
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
	if a.address != "" {
		info.Address = a.address
		if qualify {
			info.Address = node.String() + "/" + a.address
		}
	}
	if state == atollpb.ActorState_ACTOR_DEAD {
		info.DeathCause = a.cause
	}
	return info
}

func (a *hostedActor) died(message string) *atollpb.ErrorInfo {
	return errs.ToProto(&errs.ActorDiedError{ActorID: a.id.String(), Name: a.spec.GetActorCreation().GetName(), Message: message})
}

// startActor starts the host of an actor whose creation task the policy
// let through.
func (c *Core) startActor(t *task) {
	a := &hostedActor{id: ids.MustFromBytes(t.spec.ActorId), worker: c.cfg.NewWorkerID(), spec: t.spec, binary: t.binary, owner: t.owner, demand: t.demand,
		restarts: int(t.spec.GetActorCreation().GetNumRestarts())}
	c.actors[a.id] = a
	c.emit(SpawnHost{Actor: a.id, Worker: a.worker, Spec: t.spec, Binary: t.binary})
}

// HostSpawned tells the local address of an actor's host (the shell
// spawned it for SpawnHost).
func (c *Core) HostSpawned(id ids.ActorID, address string) {
	if a := c.actors[id]; a != nil {
		a.address = address
	}
}

// actorAddress is the address callers use for a's host: qualified with
// the node in a cluster.
func (c *Core) actorAddress(a *hostedActor) string {
	if c.cfg.Cluster {
		return c.cfg.NodeID.String() + "/" + a.address
	}
	return a.address
}

func (c *Core) reportActor(a *hostedActor, state atollpb.ActorState) {
	c.emit(ReportActor{Info: a.info(c.cfg.NodeID, state, c.cfg.Cluster)})
}

// ActorStarted reports that an actor's constructor ran (after its
// creation or a restart), with its error if it failed: the first success
// answers the creation task.
func (c *Core) ActorStarted(now time.Time, id ids.ActorID, err error) {
	c.now = now
	a := c.actors[id]
	if a == nil {
		return
	}
	if err != nil {
		a.cause = a.died("constructor failed: " + err.Error())
		c.emit(StopHost{Actor: a.id}) // ActorTerminated reports the death
		return
	}
	if !a.created {
		a.created = true
		c.reply(a.owner, &atollpb.TaskResult{TaskId: a.spec.TaskId, Attempt: a.spec.Attempt,
			ActorAddress: c.actorAddress(a), WorkerId: a.worker.Bytes()})
	}
	c.reportActor(a, atollpb.ActorState_ACTOR_ALIVE)
}

// ActorFailed reports the supervisor's decision about a crashed actor:
// restarted (restarts so far), or its budget is spent (reason: the last
// failure).
func (c *Core) ActorFailed(now time.Time, id ids.ActorID, reason any, restarted bool, restarts int) {
	c.now = now
	a := c.actors[id]
	if a == nil {
		return
	}
	a.restarts = restarts
	if restarted {
		c.stats.ActorRestarts++
		c.reportActor(a, atollpb.ActorState_ACTOR_RESTARTING)
		return
	}
	a.cause = a.died(fmt.Sprintf("max_restarts (%d) exhausted; last failure: %v", a.spec.GetActorCreation().GetMaxRestarts(), reason))
}

// ActorTerminated reports that an actor's host stopped for good. spent,
// if set, is the failure that exhausted its restarts (the supervisor
// records it synchronously: its notice may overtake ActorFailed).
func (c *Core) ActorTerminated(now time.Time, id ids.ActorID, spent any) {
	c.now = now
	a := c.actors[id]
	if a == nil {
		return
	}
	delete(c.actors, id)
	if spent != nil && a.cause == nil {
		a.cause = a.died(fmt.Sprintf("max_restarts (%d) exhausted; last failure: %v", a.spec.GetActorCreation().GetMaxRestarts(), spent))
	}
	c.emit(HostGone{Actor: a.id, Worker: a.worker})
	c.releaseBinary(a.binary)
	c.giveBack(a.demand)
	if a.cause == nil {
		a.cause = a.died("actor stopped")
	}
	if !a.created {
		c.reply(a.owner, &atollpb.TaskResult{TaskId: a.spec.TaskId, Attempt: a.spec.Attempt, Error: a.cause})
	}
	c.reportActor(a, atollpb.ActorState_ACTOR_DEAD)
	c.schedule()
}

// KillActor kills an actor: for good with m.NoRestart (its first cause
// of death stands), else as a crash (it restarts within its budget). An
// actor this node does not host is killed where it lives unless local.
func (c *Core) KillActor(now time.Time, m *atollpb.KillActor, local bool) {
	c.now = now
	a := c.actors[ids.MustFromBytes(m.ActorId)]
	if a == nil {
		if !local && c.cfg.Cluster {
			c.emit(KillRemoteActor{Msg: m}) // hosted on another node
		}
		return
	}
	reason := m.Reason
	if reason == "" {
		reason = "killed"
	}
	if !m.NoRestart {
		c.emit(CrashHost{Actor: a.id, Reason: reason})
		return
	}
	if a.cause != nil {
		return // already being stopped: the first cause stands
	}
	a.cause = a.died(reason)
	c.emit(StopHost{Actor: a.id})
}

// NodeGone tells that a node left the cluster: the actors hosted here for
// owners on that node die with them (their handles are gone), except
// detached ones.
func (c *Core) NodeGone(now time.Time, node ids.NodeID) {
	owner := node.String()
	var gone []*hostedActor
	for _, a := range c.actors {
		if a.spec.OwnerAddress == owner && !a.spec.GetActorCreation().GetDetached() {
			gone = append(gone, a)
		}
	}
	slices.SortFunc(gone, func(x, y *hostedActor) int { return bytes.Compare(x.id[:], y.id[:]) })
	for _, a := range gone {
		c.KillActor(now, &atollpb.KillActor{ActorId: a.id.Bytes(), NoRestart: true, Reason: "its owner's node " + node.Short() + " left the cluster"}, true)
	}
	c.jobsGone(owner)
}
