package workerconn

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// pausedConn opens the near end of a socket pair whose reader pauses
// after every frame and calls onResult on a frame "result", and returns
// it, its far end and the count of frames it read; the reader is paused
// when it returns.
func pausedConn(t *testing.T, onResult func()) (near, far *Conn, got *atomic.Int32) {
	t.Helper()
	sa, sb := testutil.SocketPair(t)
	got = new(atomic.Int32)
	near = Open(Socket(sa), func(f *atollpb.Frame) {
		got.Add(1)
		if f.GetExit().GetReason() == "result" {
			onResult()
		}
	})
	t.Cleanup(func() { _ = near.Close() })
	near.SetQuiet(func() bool { return true })
	far = Open(Socket(sb), func(*atollpb.Frame) {})
	t.Cleanup(func() { _ = far.Close() })
	if err := far.Send(exitFrame("hello")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the reader pauses", func() bool { return got.Load() == 1 && near.rmode.Load() == modePaused })
	return near, far, got
}

// A caller's claim on a paused connection: a Get of the task held reads
// its result itself; a Get of anything else, a claim on another
// connection, Wake and a goroutine waiting without reading (Park) each
// wake the reader held, so nothing waits for the reader's next look.
func TestLoneHoldsOneClaim(t *testing.T) {
	done := make(chan struct{})
	a, farA, gotA := pausedConn(t, func() { close(done) })
	b, farB, _ := pausedConn(t, func() {})
	// A woken reader reads until a frame comes; then it pauses again.
	repause := func(c, far *Conn) {
		t.Helper()
		if err := far.Send(exitFrame("again")); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the reader pauses again", func() bool { return c.rmode.Load() == modePaused })
	}
	var l Lone
	t1, t2 := ids.NewTaskID(), ids.NewTaskID()

	// Nothing held: Await declines.
	if l.Await(context.Background(), t1, closed(done)) {
		t.Fatal("Await of nothing held borrowed a connection")
	}

	// The held task's Get reads its result on its own goroutine.
	l.Hold(a, t1)
	if err := farA.Send(exitFrame("result")); err != nil {
		t.Fatal(err)
	}
	if !l.Await(context.Background(), t1, closed(done)) {
		t.Fatal("Await of the task held did not borrow its connection")
	}
	if gotA.Load() != 2 || a.rmode.Load() != modePaused {
		t.Fatalf("after the borrow: %d frames read, mode %d; want 2, paused", gotA.Load(), a.rmode.Load())
	}

	// A Get of another task wakes the reader held.
	l.Hold(a, t1)
	if l.Await(context.Background(), t2, closed(make(chan struct{}))) {
		t.Fatal("Await of a task not held borrowed a connection")
	}
	if a.rmode.Load() != modeReading {
		t.Fatal("Await of another task left the held reader paused")
	}
	repause(a, farA)

	// A claim on another connection wakes the one before.
	l.Hold(a, t1)
	l.Hold(b, t2)
	if a.rmode.Load() != modeReading || b.rmode.Load() != modePaused {
		t.Fatalf("after a claim on b: a's mode %d, b's %d; want reading, paused", a.rmode.Load(), b.rmode.Load())
	}
	l.Wake()
	if b.rmode.Load() != modeReading {
		t.Fatal("Wake left the held reader paused")
	}
	repause(a, farA)
	repause(b, farB)

	// While a goroutine waits without reading, a claim wakes at once.
	l.Park()
	l.Hold(a, t1)
	if a.rmode.Load() != modeReading {
		t.Fatal("a claim made while a goroutine waits without reading left the reader paused")
	}
	l.Unpark()
	repause(a, farA)
	l.Hold(a, t1)
	if a.rmode.Load() != modePaused {
		t.Fatal("a claim after Unpark woke the reader")
	}
}

// closed is Await's done for a channel: whether c is closed.
func closed(c <-chan struct{}) func() bool {
	return func() bool { return testutil.Closed(c) }
}
