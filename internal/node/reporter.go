package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/gcs"
)

// reportTimeout bounds one actor state write to the GCS.
const reportTimeout = 10 * time.Second

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
	rctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
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
