package atoll

import (
	"log/slog"

	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// LogHandler wraps h so that records logged with a context (InfoContext,
// ...) carry trace_id, span_id and, inside a task, task_id:
//
//	slog.SetDefault(slog.New(atoll.LogHandler(slog.NewJSONHandler(os.Stderr, nil))))
//	...
//	slog.InfoContext(ctx, "processing", "rows", n) // in a task: trace_id=... task_id=...
func LogHandler(h slog.Handler) slog.Handler { return telemetry.NewLogHandler(h) }
