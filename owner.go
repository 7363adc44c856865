package atoll

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/gcs"
	"github.com/atoll-runtime/atoll/owner"
)

// ownerActor is this process's owner: it receives the results of the
// tasks and actor calls it submitted, actor state changes from the GCS
// and references dropped by the garbage collector, and applies them to
// the ownership table (see ownerShell).
type ownerActor struct{ rt *core }

func (o *ownerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *atollpb.TaskResult:
		o.rt.owner.do(func(t *owner.Table) { t.Result(m) })
	case *atollpb.ActorInfo:
		o.rt.owner.do(func(t *owner.Table) { t.ActorEvent(m) })
	case *actorHandleDropped:
		o.rt.owner.do(func(t *owner.Table) { t.DropActorHandle(m.id) })
	case *refDropped:
		if o.rt.closed.Load() {
			return
		}
		if m.pinned {
			o.rt.store.Release(m.id)
		}
		o.rt.owner.dropRef(m.id)
	}
}

// actorReporter writes actor state changes from the raylet to the GCS, one
// at a time and in order, so the raylet never blocks on NATS.
type actorReporter struct {
	gcs *gcs.Client
	log *slog.Logger
}

func (a *actorReporter) Receive(ctx actor.Context) {
	info, ok := ctx.Message().(*atollpb.ActorInfo)
	if !ok {
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.gcs.UpdateActor(rctx, info); err != nil {
		a.log.Warn("report actor state to GCS", "actor", info.Name, "state", info.State.String(), "err", err)
	}
}

// totalMemory returns the machine's physical memory in bytes.
func totalMemory() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
