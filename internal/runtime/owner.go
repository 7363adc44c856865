package runtime

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// ownerActor is this process's owner: it receives the results of the
// tasks and actor calls it submitted, actor state changes from the GCS,
// references dropped by the garbage collector and borrowers' standalone
// reports, and applies them to the ownership table (see ownerShell). A
// worker process's owner also sends the borrow reports due
// (workerOwnerActor).
type ownerActor struct{ rt *Runtime }

func (o *ownerActor) Receive(ctx actor.Context) { o.rt.receiveOwner(ctx.Message()) }

// receiveOwner applies one message of the owner actor's.
func (rt *Runtime) receiveOwner(m any) {
	switch m := m.(type) {
	case *atollpb.TaskResult:
		rt.owner.do(func(t *owner.Table) { t.Result(m) })
	case *atollpb.ActorInfo:
		rt.owner.do(func(t *owner.Table) { t.ActorEvent(m) })
	case *generatorDropped:
		rt.owner.do(func(t *owner.Table) { t.DropGenerator(m.task) })
	case *actorHandleDropped:
		rt.owner.do(func(t *owner.Table) { t.DropActorHandle(m.id) })
	case *drainCollected:
		rt.applyCollected()
	case *atollpb.BorrowReport:
		rt.applyBorrowReport(m)
	case *flushBorrows:
		if w, ok := rt.role.(*Worker); ok {
			w.flushBorrows(m)
		}
	}
}

// post sends m to the owner actor (it only posts: safe under any lock and
// on the garbage collector's cleanup goroutine); under a simulator, to its
// loop.
func (rt *Runtime) post(m any) {
	if rt.sim != nil {
		rt.sim.env.Post(func() { rt.receiveOwner(m) })
		return
	}
	rt.system.Root.Send(rt.ownerPID, m)
}

// applyOwnerEffect carries out one effect of the Table.
func (rt *Runtime) applyOwnerEffect(e owner.Effect) {
	switch e := e.(type) {
	case owner.SendTask:
		rt.link.submitTask(e.Spec)
	case owner.SendPacked:
		rt.link.submitPacked(e.Spec)
	case *owner.CallActor:
		rt.link.callActor(e.Address, e.Spec)
	case owner.CancelTask:
		rt.link.cancelTask(e.Task, e.NonRecursive)
	case owner.Free:
		rt.freeStored(e.Objects)
	case owner.FreeStrays:
		if !rt.closed.Load() {
			rt.frees.freeStrays(e.Node, e.Objects)
		}
	case owner.Revive:
		if !rt.closed.Load() {
			rt.frees.revive(e.Objects)
		}
	case owner.Notify:
		select {
		case e.C <- struct{}{}:
		default:
		}
	case owner.Dispatched:
		// The submit span lasts until the task finishes (Finished), so a
		// failed task's is ERROR like its execute span.
		if a, ok := e.Attach.(*taskAttach); ok {
			a.span.AddEvent("dispatched")
		}
	case owner.Retried:
		if a, ok := e.Attach.(*taskAttach); ok {
			a.span.AddEvent("retry", trace.WithAttributes(attribute.Int("atoll.attempt", int(e.Attempt)),
				attribute.String("atoll.error", e.Cause.GetMessage())))
		}
	case owner.GeneratorAck:
		rt.sendGeneratorAck(e)
	case owner.LocateActor:
		// A call to the actor failed at its node: ask the GCS where it is
		// (in the background; the answer comes back as ActorLocated, a
		// lookup that gives up as LocateFailed).
		if e.After > 0 {
			rt.after(e.After, func() { rt.LocateActor(e.Actor) })
		} else {
			rt.LocateActor(e.Actor)
		}
	case owner.AskActor:
		rt.after(e.After, func() { rt.owner.do(func(t *owner.Table) { t.AskDue(e.Actor) }) })
	case owner.ActorRestartFailed:
		// No host reports this death: the owner does (in the background:
		// effects never wait on the GCS).
		info := &atollpb.ActorInfo{ActorId: e.Actor.Bytes(), Name: e.Name, Namespace: rt.settings.Namespace,
			State: atollpb.ActorState_ACTOR_DEAD, DeathCause: e.Err, OwnerId: rt.workerID.Bytes(), OwnerNodeId: rt.nodeID.Bytes()}
		report := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := rt.gcs.Do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_UpdateActor{UpdateActor: info}}); err != nil {
				rt.log.Warn("atoll: reporting the death of an actor whose restart failed", "actor", e.Actor.Short(), "err", err)
			}
		}
		if rt.sim != nil {
			rt.sim.env.Go("report actor "+e.Actor.Short(), report)
		} else {
			go report()
		}
	case owner.Finished:
		switch a := e.Attach.(type) {
		case *taskAttach:
			a.finish() // its span ended with the batch (endSubmitSpans)
		case *contextWatch:
			a.forget()
		}
	}
}

// freeStored deletes objects this process owned from the store: on every
// node in a cluster.
func (rt *Runtime) freeStored(stored []ids.ObjectID) {
	if !rt.closed.Load() {
		rt.frees.free(stored)
	}
}

// freer deletes the objects a process owned once nothing references
// them, and tells the stores of objects being rebuilt (Revive).
type freer interface {
	free(idl []ids.ObjectID)
	revive(idl []ids.ObjectID)
	// freeStrays deletes the copies on node only (owner.FreeStrays).
	freeStrays(node ids.NodeID, idl []ids.ObjectID)
}

// storeFreer frees in the node's store: a single node's driver, a worker
// process (its raylet's store; a cluster's owner on another node frees
// through the gateway of its own node).
type storeFreer struct{ store storeAPI }

func (f storeFreer) free(idl []ids.ObjectID)   { f.store.Delete(idl...) }
func (f storeFreer) revive(idl []ids.ObjectID) { f.store.Revive(idl...) }
func (f storeFreer) freeStrays(node ids.NodeID, idl []ids.ObjectID) {
	f.store.DeleteStrays(node, idl...)
}

// gatewayFreer frees on every node of a cluster, through the gateway of
// the driver's node.
type gatewayFreer struct{ g *cluster.Gateway }

func (f gatewayFreer) free(idl []ids.ObjectID)   { f.g.Free(ids.ObjectIDsBytes(idl)) }
func (f gatewayFreer) revive(idl []ids.ObjectID) { f.g.Revive(ids.ObjectIDsBytes(idl)) }
func (f gatewayFreer) freeStrays(node ids.NodeID, idl []ids.ObjectID) {
	f.g.FreeStrays(node, ids.ObjectIDsBytes(idl))
}
