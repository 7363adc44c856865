package natsembed

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// serverLogger adapts a *slog.Logger to nats-server's server.Logger. Notices,
// debug and trace lines go to debug level (nats-server is chatty at start),
// warnings and errors keep their level. It also remembers the first fatal
// message, so Start can return it instead of waiting for a timeout.
type serverLogger struct {
	log *slog.Logger // nil: discard

	mu    sync.Mutex
	fatal string
}

func (l *serverLogger) emit(level slog.Level, format string, v []any) {
	if l.log == nil || !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), slog.String("component", "nats-server"))
}

// debugEnabled reports whether debug lines would be kept, so the server
// need not format them otherwise.
func (l *serverLogger) debugEnabled() bool {
	return l.log != nil && l.log.Enabled(context.Background(), slog.LevelDebug)
}

// fatalError returns the first fatal message logged, or "".
func (l *serverLogger) fatalError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// Noticef implements server.Logger.
func (l *serverLogger) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Warnf implements server.Logger.
func (l *serverLogger) Warnf(format string, v ...any) { l.emit(slog.LevelWarn, format, v) }

// Fatalf implements server.Logger. It records the message; it never exits
// the process (the server returns from Start after a fatal error).
func (l *serverLogger) Fatalf(format string, v ...any) {
	l.mu.Lock()
	if l.fatal == "" {
		l.fatal = fmt.Sprintf(format, v...)
	}
	l.mu.Unlock()
	l.emit(slog.LevelError, format, v)
}

// Errorf implements server.Logger.
func (l *serverLogger) Errorf(format string, v ...any) { l.emit(slog.LevelError, format, v) }

// Debugf implements server.Logger.
func (l *serverLogger) Debugf(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Tracef implements server.Logger.
func (l *serverLogger) Tracef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
