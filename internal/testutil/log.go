package testutil

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// LogBuffer collects what a logger (or any other writer) writes, safe
// for concurrent writers and readers. Its zero value is ready to use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// NewLogBuffer returns a buffer and a text logger writing to it at level
// and above.
func NewLogBuffer(level slog.Level) (*LogBuffer, *slog.Logger) {
	b := &LogBuffer{}
	return b, slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: level}))
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Contains reports whether what was written so far contains s.
func (b *LogBuffer) Contains(s string) bool { return strings.Contains(b.String(), s) }

// Reset forgets what was written.
func (b *LogBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
