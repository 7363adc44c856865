package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Dead-letter logging limits used by NewSystem: at most deadLetterBurst
// dead letters are logged per deadLetterWindow; the rest are counted and
// reported as one "throttled" line. Requests whose reply lands in dead letters
// (a timed-out future) are not logged at all: the requester already saw the
// timeout.
const (
	deadLetterWindow = time.Second
	deadLetterBurst  = 3
)

// NewSystem returns a protoactor actor system whose log output goes to
// logger (slog.Default() when nil). protoactor logs routine events (system
// start, actor recovery, dead letters) at Info; they are demoted to Debug so a
// normal run stays quiet. Warn and Error records keep their level.
// Dead-letter logging is throttled.
func NewSystem(logger *slog.Logger) *actor.ActorSystem {
	if logger == nil {
		logger = slog.Default()
	}
	demoted := slog.New(demoteHandler{inner: logger.Handler()})
	return actor.NewActorSystem(
		actor.WithLoggerFactory(func(system *actor.ActorSystem) *slog.Logger {
			return demoted.With(slog.String("lib", "protoactor"), slog.String("system", system.ID))
		}),
		actor.WithDeadLetterThrottleInterval(deadLetterWindow),
		actor.WithDeadLetterThrottleCount(deadLetterBurst),
		actor.WithDeadLetterRequestLogging(false),
	)
}

// demoteHandler lowers records below Warn to Debug before handing them to
// inner.
type demoteHandler struct {
	inner slog.Handler
}

func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

// Enabled reports whether inner accepts the demoted level.
func (h demoteHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, demote(l))
}

// Handle passes a copy of r with the demoted level to inner.
func (h demoteHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.inner.Handle(ctx, r)
}

// WithAttrs wraps inner.WithAttrs.
func (h demoteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteHandler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup wraps inner.WithGroup.
func (h demoteHandler) WithGroup(name string) slog.Handler {
	return demoteHandler{inner: h.inner.WithGroup(name)}
}
