package telemetry

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// TaskIDKey is the key WithTaskID records a task's id under, for a
// context type of a task runner's own that answers it (a fmt.Stringer)
// without a context.WithValue of its own.
type TaskIDKey struct{}

// WithTaskID records the id of the task running under ctx. It is kept
// as given and made a string only when a record is logged: every task
// runs under one, few log.
func WithTaskID(ctx context.Context, taskID fmt.Stringer) context.Context {
	return context.WithValue(ctx, TaskIDKey{}, taskID)
}

// TaskID returns the id of the task running under ctx, or "".
func TaskID(ctx context.Context) string {
	if id, ok := ctx.Value(TaskIDKey{}).(fmt.Stringer); ok {
		return id.String()
	}
	return ""
}

// LogHandler wraps an slog.Handler so every record logged with a context
// carries trace_id, span_id and task_id when the context has them.
type LogHandler struct{ inner slog.Handler }

// NewLogHandler wraps inner.
func NewLogHandler(inner slog.Handler) *LogHandler { return &LogHandler{inner: inner} }

// Enabled implements slog.Handler.
func (h *LogHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
		if id := TaskID(ctx); id != "" {
			r.AddAttrs(slog.String("task_id", id))
		}
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{inner: h.inner.WithGroup(name)}
}
