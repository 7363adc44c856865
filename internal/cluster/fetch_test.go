package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/remote"
)

// fetchNode is one node's object path, for tests of the fetcher: a real
// store actor over its own shared-memory arena, and a transfer server
// serving it.
type fetchNode struct {
	id     ids.NodeID
	system *actor.ActorSystem
	pid    *actor.PID
	arena  *objectstore.Arena
	server *remote.Server
}

func startFetchNode(t *testing.T, size uint64) *fetchNode {
	t.Helper()
	arena, err := objectstore.NewArena("fetch-test", size, objectstore.ArenaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = arena.Close() })
	props, err := objectstore.NewProps(objectstore.Config{}, arena)
	if err != nil {
		t.Fatal(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	n := &fetchNode{id: ids.NewNodeID(), system: system, pid: system.Root.Spawn(props), arena: arena}
	t.Cleanup(func() {
		_ = system.Root.StopFuture(n.pid).Wait()
		system.Shutdown()
	})
	n.server, err = remote.Listen("127.0.0.1:0", serve(n.client()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.server.Close() })
	return n
}

func (n *fetchNode) client() *objectstore.Client {
	return objectstore.NewClient(n.system.Root, n.pid, n.arena, ids.NewWorkerID())
}

// fetcher returns the node's fetcher, pulling from the peers given.
func (n *fetchNode) fetcher(t *testing.T, peers ...*fetchNode) *fetcher {
	t.Helper()
	rc, err := remote.NewClient(remote.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	puller, err := remote.NewPuller(rc, remote.PullerConfig{MaxInFlight: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close(); puller.Close() })
	f := &fetcher{self: n.id, store: n.client(), puller: puller, addrs: map[ids.NodeID]string{}}
	for _, p := range peers {
		f.setAddr(p.id, p.server.Addr())
	}
	return f
}

// fetchBehindCreation starts a fetch of id (size bytes, held on node
// from) and returns once it found another creation of id in its store
// and waits on it; the fetch's error comes on the channel returned.
func fetchBehindCreation(t *testing.T, ctx context.Context, f *fetcher, from *fetchNode, id ids.ObjectID, size int) <-chan error {
	t.Helper()
	waiting := make(chan struct{}, 1)
	f.onOtherCreation = func(ids.ObjectID) {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	done := make(chan error, 1)
	ref := &atollpb.ObjectRef{ObjectId: id.Bytes(), NodeId: from.id.Bytes(), Codec: atollpb.Codec_CODEC_BYTES, Size: uint64(size)}
	go func() { done <- f.Fetch(ctx, []*atollpb.ObjectRef{ref}) }()
	recv(t, waiting, "the fetch never found the worker's creation")
	return done
}

// A reader pulling an object that a worker of its node is creating in the
// store at the same time (a task run again, writing it as its result)
// waits for that creation; when the worker gives it up, the reader pulls
// the object itself at once, not after the whole wait for a seal.
func TestFetchTakesOverAnAbandonedCreation(t *testing.T) {
	a, b := startFetchNode(t, 4<<20), startFetchNode(t, 4<<20)
	id := ids.ReturnObjectID(ids.NewTaskID(), 0)
	want := bytes.Repeat([]byte("atoll"), 2000)
	if err := b.client().Put(context.Background(), id, atollpb.Codec_CODEC_BYTES, want); err != nil {
		t.Fatal(err)
	}
	worker := a.client()
	if _, err := worker.Create(context.Background(), id, uint64(len(want)), atollpb.Codec_CODEC_BYTES); err != nil {
		t.Fatal(err)
	}
	f := a.fetcher(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := fetchBehindCreation(t, ctx, f, b, id, len(want))
	select {
	case err := <-done:
		t.Fatalf("the fetch returned while the worker's creation was unsealed: %v", err)
	default:
	}
	worker.Disconnect() // the worker dies: the store gives its creation up
	if err := recv(t, done, "the fetch did not end"); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	objs, err := a.client().Get(ctx, []ids.ObjectID{id}, 0)
	if err != nil {
		t.Fatalf("the pulled copy is not in the store: %v", err)
	}
	if !bytes.Equal(objs[0].Data, want) {
		t.Fatalf("the pulled copy holds other bytes")
	}
	if got := f.pulls.Load(); got != 1 {
		t.Fatalf("%d pulls, want 1", got)
	}
}

// A creation that is sealed ends the wait with the creator's bytes, and
// nothing is pulled.
func TestFetchWaitsForAnotherCreation(t *testing.T) {
	a, b := startFetchNode(t, 4<<20), startFetchNode(t, 4<<20)
	id := ids.ReturnObjectID(ids.NewTaskID(), 0)
	want := bytes.Repeat([]byte("sea"), 3000)
	if err := b.client().Put(context.Background(), id, atollpb.Codec_CODEC_BYTES, want); err != nil {
		t.Fatal(err)
	}
	worker := a.client()
	buf, err := worker.Create(context.Background(), id, uint64(len(want)), atollpb.Codec_CODEC_BYTES)
	if err != nil {
		t.Fatal(err)
	}
	f := a.fetcher(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := fetchBehindCreation(t, ctx, f, b, id, len(want))
	copy(buf, want)
	if err := worker.Seal(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done, "the fetch did not end"); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if got := f.pulls.Load(); got != 0 {
		t.Fatalf("%d pulls, want 0: the worker's copy was sealed", got)
	}
}
