package testutil

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	EventuallyWithin(t, 5*time.Second, "the third check", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("cond checked %d times, want 3", got)
	}
}

// fatalRecorder records a Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = format
	panic(r)
}

func TestEventuallyFailsAfterTheTimeout(t *testing.T) {
	r := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != r {
				t.Fatalf("recovered %v, want the recorder's Fatalf", p)
			}
		}()
		EventuallyWithin(r, 30*time.Millisecond, "never", func() bool { return false })
	}()
	if r.msg == "" {
		t.Fatal("no failure after the timeout")
	}
}

func TestLogBuffer(t *testing.T) {
	b, log := NewLogBuffer(slog.LevelWarn)
	log.Info("quiet")
	log.Warn("loud", "k", 1)
	if b.Contains("quiet") || !b.Contains("loud") || !b.Contains("k=1") {
		t.Fatalf("log = %q", b.String())
	}
	b.Reset()
	if b.String() != "" {
		t.Fatal("Reset kept the log")
	}
}

func TestClosed(t *testing.T) {
	c := make(chan struct{})
	if Closed(c) {
		t.Fatal("an open channel reads as closed")
	}
	close(c)
	if !Closed(c) {
		t.Fatal("a closed channel reads as open")
	}
}
