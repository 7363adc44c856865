package workerconn

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

// transports are the two a Conn runs over; every test of a connection
// runs over both.
var transports = []struct {
	name string
	ends func() (Endpoint, Endpoint)
}{
	{"socket", func() (Endpoint, Endpoint) { a, b := net.Pipe(); return Socket(a), Socket(b) }},
	{"pipe", Pipe},
}

// pairFunc connects two Conns whose handlers ha and hb make.
type pairFunc func(t *testing.T, ha, hb func(*Conn) Handler) (*Conn, *Conn)

// overTransports runs test once per transport.
func overTransports(t *testing.T, test func(t *testing.T, pair pairFunc)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			test(t, func(t *testing.T, ha, hb func(*Conn) Handler) (*Conn, *Conn) {
				return pairOver(t, tr.ends, ha, hb)
			})
		})
	}
}

func pairOver(t *testing.T, ends func() (Endpoint, Endpoint), ha, hb func(*Conn) Handler) (*Conn, *Conn) {
	t.Helper()
	ca, cb := ends()
	var a, b *Conn
	var ready sync.WaitGroup
	ready.Add(1)
	hA := func(f *atollpb.Frame) { ready.Wait(); ha(a)(f) }
	hB := func(f *atollpb.Frame) { ready.Wait(); hb(b)(f) }
	a, b = Open(ca, hA), Open(cb, hB)
	ready.Done()
	t.Cleanup(func() { a.Close(); b.Close(); <-a.Done(); <-b.Done() })
	return a, b
}

func TestRequestsAndRepliesBothWays(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		echo := func(c *Conn) Handler {
			return func(f *atollpb.Frame) {
				if f.Id != 0 {
					go c.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: &atollpb.ErrorInfo{Message: f.GetExit().GetReason()}}})
				}
			}
		}
		a, b := pair(t, echo, echo)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := range 50 {
			for _, c := range []*Conn{a, b} {
				wg.Go(func() {
					msg := string(rune('a' + i%26))
					r, err := c.Call(ctx, &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: msg}}})
					if err != nil || r.GetStatus().GetMessage() != msg {
						t.Errorf("call %d: %v %v", i, r, err)
					}
				})
			}
		}
		wg.Wait()
	})
}

func TestOneWayFramesReachTheHandler(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		got := make(chan string, 3)
		recv := func(*Conn) Handler { return func(f *atollpb.Frame) { got <- f.GetExit().GetReason() } }
		a, _ := pair(t, func(*Conn) Handler { return func(*atollpb.Frame) {} }, recv)
		for _, s := range []string{"x", "y", "z"} {
			if err := a.Send(&atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: s}}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []string{"x", "y", "z"} {
			if s := <-got; s != want {
				t.Fatalf("got %q, want %q (frames must arrive in order)", s, want)
			}
		}
	})
}

func TestPeerCloseFailsPendingCalls(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		silent := func(*Conn) Handler { return func(*atollpb.Frame) {} }
		a, b := pair(t, silent, silent)
		done := make(chan error, 1)
		go func() {
			_, err := a.Call(context.Background(), &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{}}})
			done <- err
		}()
		b.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("pending call after peer close: %v", err)
		}
		<-a.Done()
		if err := a.Send(&atollpb.Frame{}); err == nil {
			t.Fatal("send on a closed connection succeeded")
		}
	})
}

// held answers each request only when the test says so, through answer.
func held(answer <-chan struct{}) func(*Conn) Handler {
	return func(c *Conn) Handler {
		return func(f *atollpb.Frame) {
			if f.Id == 0 {
				return
			}
			go func() {
				<-answer
				_ = c.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: &atollpb.ErrorInfo{Message: f.GetExit().GetReason()}}})
			}()
		}
	}
}

func exitFrame(reason string) *atollpb.Frame {
	return &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: reason}}}
}

func TestAbandonedCallReplyGoesToLate(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		answer := make(chan struct{})
		others := make(chan *atollpb.Frame, 1)
		a, _ := pair(t, func(*Conn) Handler { return func(f *atollpb.Frame) { others <- f } }, held(answer))
		late := make(chan *atollpb.Frame, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := a.CallLate(ctx, exitFrame("granted"), func(r *atollpb.Frame) { late <- r })
			done <- err
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("abandoned call: %v", err)
		}
		a.mu.Lock()
		n := a.abandoned
		a.mu.Unlock()
		if n != 1 {
			t.Fatalf("%d abandoned calls recorded, want 1", n)
		}
		close(answer)
		if r := <-late; r.GetStatus().GetMessage() != "granted" {
			t.Fatalf("late reply %v", r)
		}
		a.mu.Lock()
		n, left := a.abandoned, len(a.pending)
		a.mu.Unlock()
		if n != 0 || left != 0 {
			t.Fatalf("after the late reply: %d abandoned, %d pending", n, left)
		}
		select {
		case f := <-others:
			t.Fatalf("the late reply also reached the handler: %v", f)
		default:
		}
	})
}

func TestAbandonedCallWithoutLateIsForgotten(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		answer := make(chan struct{})
		a, _ := pair(t, func(*Conn) Handler { return func(*atollpb.Frame) {} }, held(answer))
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := a.Call(ctx, exitFrame("x")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call: %v", err)
		}
		a.mu.Lock()
		left := len(a.pending)
		a.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d calls still pending after their callers gave up", left)
		}
		close(answer)
		// The connection still works after the stray reply.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		if r, err := a.Call(ctx2, exitFrame("y")); err != nil || r.GetStatus().GetMessage() != "y" {
			t.Fatalf("call after a stray reply: %v %v", r, err)
		}
	})
}

func TestCloseDropsAbandonedCalls(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		never := make(chan struct{})
		a, b := pair(t, func(*Conn) Handler { return func(*atollpb.Frame) {} }, held(never))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		// The context is already done: the call is sent and abandoned at once.
		if _, err := a.CallLate(ctx, exitFrame("x"), func(*atollpb.Frame) { t.Error("late called after close") }); !errors.Is(err, context.Canceled) {
			t.Fatalf("call: %v", err)
		}
		b.Close()
		<-a.Done()
		a.mu.Lock()
		n, left := a.abandoned, len(a.pending)
		a.mu.Unlock()
		if n != 0 || left != 0 {
			t.Fatalf("after close: %d abandoned, %d pending", n, left)
		}
		close(never)
	})
}

// A peer that sends an oversize length or stops inside a frame ends the
// connection with an error saying so.
func TestBadFramesEndTheConnection(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want error
	}{
		{header(MaxFrame + 1), ErrBadFrame},
		{append(header(3), 0xff, 0xff, 0xff), ErrBadFrame},
		{append(header(10), 1, 2), io.ErrUnexpectedEOF},
		{header(10), io.ErrUnexpectedEOF},
		{header(0)[:2], io.ErrUnexpectedEOF},
	} {
		a, b := net.Pipe()
		conn := New(a, func(*atollpb.Frame) {})
		go func() {
			_, _ = b.Write(c.data)
			_ = b.Close()
		}()
		<-conn.Done()
		if err := conn.Err(); !errors.Is(err, ErrClosed) || !errors.Is(err, c.want) {
			t.Errorf("after % x: %v, want %v", c.data, err, c.want)
		}
	}
}

// Queue never waits for the peer: frames queued while the peer reads
// nothing are all written once it does, in order, with frames sent
// between them; and a burst of them takes fewer writes than frames.
func TestQueueWritesInOrderWithoutWaiting(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		const n = 200
		got := make(chan string, 2*n)
		recv := func(*Conn) Handler { return func(f *atollpb.Frame) { got <- f.GetExit().GetReason() } }
		a, _ := pair(t, func(*Conn) Handler { return func(*atollpb.Frame) {} }, recv)
		var want []string
		for i := range n {
			s := string(rune('a'+i%26)) + string(rune('0'+i%10))
			want = append(want, s)
			f := &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: s}}}
			var err error
			if i%3 == 0 {
				err = a.Send(f)
			} else {
				err = a.Queue(f)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, w := range want {
			if s := <-got; s != w {
				t.Fatalf("frame %d: got %q, want %q", i, s, w)
			}
		}
		if st := a.Stats(); st.Frames != n || st.Writes > n {
			t.Fatalf("stats %+v for %d frames", st, n)
		}
	})
}

// A reader's burst end is called after the last frame of what it read:
// frames written in one write arrive as one burst.
func TestBurstEndAfterEachBurst(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			ea, eb := tr.ends()
			events := make(chan string, 16)
			b := Open(eb, func(f *atollpb.Frame) { events <- f.GetExit().GetReason() }, WithBurstEnd(func() { events <- "|" }))
			a := Open(ea, func(*atollpb.Frame) {})
			defer func() { a.Close(); b.Close(); <-a.Done(); <-b.Done() }()
			frame := func(s string) *atollpb.Frame {
				return &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: s}}}
			}
			if err := a.SendAll(frame("x"), frame("y"), frame("z")); err != nil {
				t.Fatal(err)
			}
			var seq string
			for seq == "" || seq[len(seq)-1] != '|' {
				seq += <-events
			}
			// net.Pipe hands over one write per read: the burst is whole.
			if seq != "xyz|" {
				t.Fatalf("events %q, want the three frames then one burst end", seq)
			}
		})
	}
}

// exitEncoder appends one exit frame per reason.
type exitEncoder struct{ reasons []string }

func (e *exitEncoder) AppendFrames(buf []byte) ([]byte, error) {
	for _, r := range e.reasons {
		var err error
		if buf, err = AppendFrame(buf, &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: r}}}); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// Encode writes the frames an Encoder appends, waiting or not.
func TestEncode(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		got := make(chan string, 8)
		recv := func(*Conn) Handler { return func(f *atollpb.Frame) { got <- f.GetExit().GetReason() } }
		a, _ := pair(t, func(*Conn) Handler { return func(*atollpb.Frame) {} }, recv)
		if err := a.Encode(&exitEncoder{reasons: []string{"p", "q"}}, true); err != nil {
			t.Fatal(err)
		}
		if err := a.Encode(&exitEncoder{reasons: []string{"r"}}, false); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"p", "q", "r"} {
			if s := <-got; s != w {
				t.Fatalf("got %q, want %q", s, w)
			}
		}
		if st := a.Stats(); st.Frames != 3 {
			t.Fatalf("%d frames counted, want 3", st.Frames)
		}
	})
}

// A handler that runs long on the reader in yielding work (a task run
// inline) and waits for a reply only the reader can read gets it: its
// Call hands the reading to another goroutine, which goes on with the
// frames after it; the first returns once its handler does.
func TestHandoffLetsAYieldingHandlerWaitForFrames(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		got := make(chan string, 8)
		var b *Conn
		handlerB := func(c *Conn) Handler {
			b = c
			return func(f *atollpb.Frame) {
				reason := f.GetExit().GetReason()
				if reason == "call" {
					done := c.Yielding()
					defer done()
					r, err := c.Call(context.Background(), &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: "ping"}}})
					if err != nil {
						t.Errorf("call: %v", err)
						return
					}
					got <- "reply " + r.GetStatus().GetMessage()
					return
				}
				got <- reason
			}
		}
		echo := func(c *Conn) Handler {
			return func(f *atollpb.Frame) {
				if f.Id != 0 {
					_ = c.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: &atollpb.ErrorInfo{Message: "pong"}}})
				}
			}
		}
		a, _ := pair(t, echo, handlerB)
		for _, s := range []string{"call", "after"} {
			if err := a.Send(&atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: s}}}); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		for range 2 {
			seen[<-got] = true
		}
		if !seen["reply pong"] || !seen["after"] {
			t.Fatalf("got %v", seen)
		}
		// Outside yielding work nothing hands off.
		if b.Handoff() {
			t.Fatal("a Handoff outside yielding work")
		}
	})
}

// Deferred frames go out with TryFlush, in order with those sent.
func TestDeferAndTryFlush(t *testing.T) {
	overTransports(t, func(t *testing.T, pair pairFunc) {
		got := make(chan string, 8)
		recv := func(*Conn) Handler { return func(f *atollpb.Frame) { got <- f.GetExit().GetReason() } }
		a, _ := pair(t, func(*Conn) Handler { return func(*atollpb.Frame) {} }, recv)
		frame := func(s string) *atollpb.Frame {
			return &atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: s}}}
		}
		if err := a.Defer(frame("1"), frame("2")); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			t.Fatalf("a deferred frame %q went out before a flush", s)
		case <-time.After(20 * time.Millisecond):
		}
		a.TryFlush()
		if err := a.Send(frame("3")); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"1", "2", "3"} {
			if s := <-got; s != w {
				t.Fatalf("got %q, want %q", s, w)
			}
		}
	})
}
