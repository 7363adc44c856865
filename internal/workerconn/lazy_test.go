package workerconn

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Lazy reading, scripted between two ends of a real socket pair: a's
// reader pauses once nothing is expected; a goroutine waiting for a reply
// then reads it itself (Borrow); a borrow ends when its context does,
// leaving the connection whole; a frame nobody asked for is read once the
// pause runs out; and Wake makes the reader read again.
func TestLazyReadingLetsAWaiterReadItsReply(t *testing.T) {
	sa, sb := testutil.SocketPair(t)
	var expected, got atomic.Int32
	var borrowing, onBorrower atomic.Bool
	a := Open(Socket(sa), func(f *atollpb.Frame) {
		if borrowing.Load() {
			onBorrower.Store(true)
		}
		if r := f.GetExit().GetReason(); r == "pong" || len(r) > 1000 {
			expected.Store(0) // what was expected came
		}
		got.Add(1)
	})
	defer a.Close()
	a.SetQuiet(func() bool { return expected.Load() == 0 })
	var b *Conn
	b = Open(Socket(sb), func(f *atollpb.Frame) {
		if f.GetExit() != nil && f.GetExit().Reason == "ping" {
			_ = b.Queue(exitFrame("pong"))
		}
	})
	defer b.Close()

	// A frame read while nothing is expected pauses the reader.
	if err := b.Send(exitFrame("hello")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a's reader pauses", func() bool { return got.Load() == 1 && a.rmode.Load() == modePaused })

	// A ping's pong is read by the goroutine that waits for it.
	expected.Store(1)
	if err := a.Send(exitFrame("ping")); err != nil {
		t.Fatal(err)
	}
	borrowing.Store(true)
	ok := a.Borrow(context.Background(), func() bool { return got.Load() == 2 })
	borrowing.Store(false)
	if !ok || !onBorrower.Load() || got.Load() != 2 {
		t.Fatalf("Borrow: %v, the pong read on the borrower: %v, frames %d; want true, true, 2", ok, onBorrower.Load(), got.Load())
	}
	// Quiet again: paused, so the next waiter may read too.
	if m := a.rmode.Load(); m != modePaused {
		t.Fatalf("after the borrow the reader's mode is %d, want paused", m)
	}

	// A borrow whose context ends returns without failing the connection.
	ctx, cancel := context.WithCancel(context.Background())
	expected.Store(1)
	go cancel()
	if !a.Borrow(ctx, func() bool { return false }) {
		t.Fatal("a borrow of a paused reader was refused")
	}
	expected.Store(0)
	select {
	case <-a.Done():
		t.Fatalf("the connection ended with the borrow's context: %v", a.Err())
	default:
	}

	// A frame nobody waits for is read anyway, by the reader once its
	// pause runs out (or at once if the borrow handed it back).
	if err := b.Send(exitFrame("unasked")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the unasked frame is read", func() bool { return got.Load() == 3 })

	// A borrow cut short by its context inside a frame leaves the frame's
	// first part in the buffer: the frame is read whole later.
	testutil.Eventually(t, "a's reader pauses again", func() bool { return a.rmode.Load() == modePaused })
	frame, err := AppendFrame(nil, exitFrame("halves"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Write(frame[:len(frame)/2]); err != nil {
		t.Fatal(err)
	}
	expected.Store(1)
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if !a.Borrow(short, func() bool { return false }) {
		t.Fatal("a borrow of a paused reader was refused")
	}
	expected.Store(0)
	if _, err := sb.Write(frame[len(frame)/2:]); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the halved frame is read whole", func() bool { return got.Load() == 4 })

	// A frame larger than the read buffer is left to the reader.
	testutil.Eventually(t, "a's reader pauses again", func() bool { return a.rmode.Load() == modePaused })
	expected.Store(1)
	if err := b.Send(exitFrame(strings.Repeat("x", 100<<10))); err != nil {
		t.Fatal(err)
	}
	if !a.Borrow(context.Background(), func() bool { return got.Load() == 5 }) {
		t.Fatal("a borrow of a paused reader was refused")
	}
	testutil.Eventually(t, "the large frame is read", func() bool { return got.Load() == 5 })
	select {
	case <-a.Done():
		t.Fatalf("the connection ended: %v", a.Err())
	default:
	}

	// A borrow is refused while the reader reads; Wake ends a pause.
	testutil.Eventually(t, "a's reader pauses again", func() bool { return a.rmode.Load() == modePaused })
	a.Wake()
	if m := a.rmode.Load(); m != modeReading {
		t.Fatalf("after Wake the reader's mode is %d, want reading", m)
	}
	if a.Borrow(context.Background(), func() bool { return true }) {
		t.Fatal("a borrow was granted while the reader reads")
	}
}

// A pipe never pauses: its reader hands frames over without a system
// call, and a borrow is refused.
func TestLazyReadingIsForSocketsOnly(t *testing.T) {
	near, far := Pipe()
	var got atomic.Int32
	a := Open(near, func(*atollpb.Frame) { got.Add(1) })
	defer a.Close()
	a.SetQuiet(func() bool { return true })
	b := Open(far, func(*atollpb.Frame) {})
	defer b.Close()
	if err := b.Send(exitFrame("hello")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the frame is read", func() bool { return got.Load() == 1 })
	if a.rmode.Load() != modeReading || a.Borrow(context.Background(), func() bool { return true }) {
		t.Fatal("a pipe's reader paused, or lent its reading")
	}
}
