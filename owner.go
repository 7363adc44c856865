package atoll

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// ownerActor is this process's owner: it receives the results of the
// tasks and actor calls it submitted, actor state changes from the GCS,
// references dropped by the garbage collector and borrowers' standalone
// reports, and applies them to the ownership table (see ownerShell); in
// a worker process it also sends the borrow reports due (flushBorrows).
type ownerActor struct{ rt *core }

func (o *ownerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *atollpb.TaskResult:
		o.rt.owner.do(func(t *owner.Table) { t.Result(m) })
	case *atollpb.ActorInfo:
		o.rt.owner.do(func(t *owner.Table) { t.ActorEvent(m) })
	case *generatorDropped:
		o.rt.owner.do(func(t *owner.Table) { t.DropGenerator(m.task) })
	case *actorHandleDropped:
		o.rt.owner.do(func(t *owner.Table) { t.DropActorHandle(m.id) })
	case *drainCollected:
		o.rt.applyCollected()
	case *flushBorrows:
		o.rt.flushBorrows(m)
	case *atollpb.BorrowReport:
		o.rt.applyBorrowReport(m)
	}
}
