package workerproto

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// TestFetchEndsWithTheWorker: a pull the node makes for a worker stops
// when the worker's connection ends, before the owner of what it asked for
// frees it under the pull (a call that failed with its actor drops its
// arguments).
func TestFetchEndsWithTheWorker(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	p := &proxy{cfg: &raylet.ProcessConfig{Fetch: func(ctx context.Context, _ []*atollpb.ObjectRef) error {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return ctx.Err()
	}}}
	a, b := net.Pipe()
	node := workerconn.New(a, func(*atollpb.Frame) {})
	worker := workerconn.New(b, func(*atollpb.Frame) {})
	t.Cleanup(func() { worker.Close() })

	go p.fetch(node, 1, &atollpb.FetchObjects{})
	<-started
	select {
	case err := <-ended:
		t.Fatalf("the pull ended while its worker lives: %v", err)
	default:
	}
	node.Close() // the worker's connection ends
	select {
	case err := <-ended:
		if err != context.Canceled {
			t.Fatalf("the pull ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pull went on after its worker's connection ended")
	}
}
