package workerconn

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll/atollpb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pair(t *testing.T, ha, hb func(*Conn) Handler) (*Conn, *Conn) {
	t.Helper()
	ca, cb := net.Pipe()
	var a, b *Conn
	var ready sync.WaitGroup
	ready.Add(1)
	hA := func(f *atollpb.Frame) { ready.Wait(); ha(a)(f) }
	hB := func(f *atollpb.Frame) { ready.Wait(); hb(b)(f) }
	a, b = New(ca, hA), New(cb, hB)
	ready.Done()
	t.Cleanup(func() { a.Close(); b.Close(); <-a.Done(); <-b.Done() })
	return a, b
}

func TestRequestsAndRepliesBothWays(t *testing.T) {
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
}

func TestOneWayFramesReachTheHandler(t *testing.T) {
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
}

func TestPeerCloseFailsPendingCalls(t *testing.T) {
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
}
