package atoll

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
)

// ownerActor is this process's owner: it receives the results of the
// tasks and actor calls it submitted, and actor state changes from the
// GCS, and applies them to the object, task and actor tables.
type ownerActor struct{ rt *core }

func (o *ownerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *atollpb.TaskResult:
		o.rt.onResult(m)
	case *atollpb.ActorInfo:
		o.rt.actors.onEvent(o.rt, m)
	}
}
