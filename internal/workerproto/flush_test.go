package workerproto

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/testutil"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// TestBurstResultsGoBackInParts: an actor's worker sent 4*flushEvery
// short calls in one write runs them as one burst, and writes their
// results back flushEvery at a time, not all at the burst's end: the
// caller hears of the first results, and can send more, while the worker
// runs the rest. The worker is served on a socket pair, as a worker
// process is: each part is then one write at once, where on an in-memory
// pipe the parts wait for the flusher goroutine, which writes what it
// finds when it runs (as few as one write on a busy machine).
func TestBurstResultsGoBackInParts(t *testing.T) {
	a, b := testutil.SocketPair(t)
	near, srv, served := serveEnds(workerconn.Socket(a), workerconn.Socket(b))
	defer func() {
		<-served
		<-srv.Conn().Done()
	}()
	const n = 4 * flushEvery
	results := make(chan *atollpb.TaskResult, n)
	node := workerconn.Open(near, func(f *atollpb.Frame) {
		if r := f.GetTaskResult(); r != nil {
			results <- r
		}
	})
	defer node.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	created, err := node.Call(ctx, &atollpb.Frame{Body: &atollpb.Frame_CreateActor{CreateActor: &atollpb.TaskSpec{
		TaskId: ids.NewTaskID().Bytes(), ActorCreation: &atollpb.ActorCreationSpec{ActorType: "A"}}}})
	if err != nil || created.GetStatus().GetCode() != 0 {
		t.Fatalf("create the actor: %v, %v", created, err)
	}
	before := srv.Conn().Stats().Writes // the hello, the creation's reply
	pushes := make([]*atollpb.Frame, n)
	for i := range pushes {
		pushes[i] = &atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: &atollpb.TaskSpec{
			TaskId: ids.NewTaskID().Bytes(), Name: "c", Function: "A.record", Type: atollpb.TaskType_ACTOR_TASK, NumReturns: 1}}}}
	}
	if err := node.Defer(pushes...); err != nil {
		t.Fatal(err)
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		select {
		case r := <-results:
			if r.GetError() != nil {
				t.Fatalf("call %d failed: %v", i, r.GetError())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d results of %d", i, n)
		}
	}
	if writes := srv.Conn().Stats().Writes - before; writes < n/flushEvery {
		t.Fatalf("%d results came back in %d writes, want at least %d", n, writes, n/flushEvery)
	}
}
