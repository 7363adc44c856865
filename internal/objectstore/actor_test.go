package objectstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// testStore is a store actor running in a real actor system over a real
// memfd arena.
type testStore struct {
	t      testing.TB
	system *actor.ActorSystem
	pid    *actor.PID
	props  *actor.Props
	arena  *Arena
}

func startStore(t testing.TB, size uint64, cfg Config) *testStore {
	t.Helper()
	arena := newTestArena(t, size, ArenaOptions{})
	props, err := NewProps(cfg, arena)
	if err != nil {
		t.Fatal(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	ts := &testStore{t: t, system: system, pid: system.Root.Spawn(props), props: props, arena: arena}
	t.Cleanup(func() {
		_ = system.Root.StopFuture(ts.pid).Wait()
		system.Shutdown()
	})
	return ts
}

// client returns a client with its own mapping of the arena, as a worker
// process would have.
func (ts *testStore) client() *Client {
	var arena *Arena
	if t, ok := ts.t.(*testing.T); ok {
		arena = openSecondMapping(t, ts.arena)
	} else {
		arena = ts.arena
	}
	return NewClient(ts.system.Root, ts.pid, arena, ids.NewWorkerID())
}

func (ts *testStore) stats() *atollpb.StoreStats {
	ts.t.Helper()
	res, err := ts.system.Root.RequestFuture(ts.pid, &atollpb.StoreStatsRequest{}, 10*time.Second).Result()
	if err != nil {
		ts.t.Fatal(err)
	}
	return res.(*atollpb.StoreStats)
}

// request sends a raw protocol message and returns the future of its reply.
func (ts *testStore) request(msg any) actor.Future {
	return ts.system.Root.RequestFuture(ts.pid, msg, 10*time.Second)
}

var bg = context.Background()

func newObjectID() ids.ObjectID { return ids.PutObjectID(ids.NewTaskID(), 1) }

func TestClientRoundTrip(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	writer, reader := ts.client(), ts.client()
	id := newObjectID()
	buf, err := writer.Create(bg, id, 11, atollpb.Codec_CODEC_BYTES)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, "hello world")
	if err := writer.Seal(bg, id); err != nil {
		t.Fatal(err)
	}
	objs, err := reader.Get(bg, []ids.ObjectID{id}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].ID != id || objs[0].Codec != atollpb.Codec_CODEC_BYTES || string(objs[0].Data) != "hello world" {
		t.Fatalf("got %+v", objs)
	}
	// The reader's view aliases the writer's memory: no copy was made.
	buf[0] = 'H'
	if objs[0].Data[0] != 'H' {
		t.Fatal("reader's view is not the shared memory")
	}
	if st := ts.stats(); st.UsedBytes != 64 || st.PinnedBytes != 64 || st.NumSealed != 1 {
		t.Fatalf("stats %v", st)
	}
	reader.Release(id)
	writer.Delete(id)
	if st := ts.stats(); st.UsedBytes != 0 || st.NumObjects != 0 || st.PinnedBytes != 0 {
		t.Fatalf("stats after delete %v", st)
	}
}

func TestClientPutGetLarge(t *testing.T) {
	ts := startStore(t, 8<<20, Config{})
	c := ts.client()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	id := newObjectID()
	if err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, data); err != nil {
		t.Fatal(err)
	}
	objs, err := ts.client().Get(bg, []ids.ObjectID{id, id}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(objs[0].Data, data) || !bytes.Equal(objs[1].Data, data) {
		t.Fatal("data differs")
	}
	if err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, data); !errors.Is(err, ErrObjectExists) || !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("second Put: %v", err)
	}
}

func TestUsageReturnsToZero(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	a, b := ts.client(), ts.client()
	var list []ids.ObjectID
	var want uint64
	for i := range 20 {
		id := newObjectID()
		size := uint64(i * 1000)
		if err := a.Put(bg, id, atollpb.Codec_CODEC_BYTES, make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		list = append(list, id)
		want += BlockSize(size)
	}
	if got := ts.stats().UsedBytes; got != want {
		t.Fatalf("used %d, want %d", got, want)
	}
	// a pins every object twice, b once.
	for _, c := range []*Client{a, a, b} {
		if _, err := c.Get(bg, list, 0); err != nil {
			t.Fatal(err)
		}
	}
	a.Delete(list[:10]...)
	a.Release(list...)
	b.Release(list...)
	if st := ts.stats(); st.UsedBytes != want || st.PinnedBytes != want {
		t.Fatalf("still pinned by a: %v", st)
	}
	a.Release(list...)
	if st := ts.stats(); st.PinnedBytes != 0 || st.NumObjects != 10 {
		t.Fatalf("after last release: %v", st)
	}
	a.Delete(list...)
	if st := ts.stats(); st.UsedBytes != 0 || st.NumObjects != 0 || st.LargestFreeBlock != 1<<20 {
		t.Fatalf("after delete: %v", st)
	}
}

func TestDeletePinnedFreesAtLastRelease(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	id := newObjectID()
	if err := c.Put(bg, id, atollpb.Codec_CODEC_INT64, make([]byte, 800)); err != nil {
		t.Fatal(err)
	}
	objs, err := c.Get(bg, []ids.ObjectID{id}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Delete(id)
	if st := ts.stats(); st.UsedBytes != 832 || st.NumObjects != 1 {
		t.Fatalf("pinned object freed early: %v", st)
	}
	if _, err := c.Get(bg, []ids.ObjectID{id}, 0); !errors.Is(err, errs.ErrGetTimeout) {
		t.Fatalf("Get of a deleted object: %v", err)
	}
	if len(objs[0].Data) != 800 {
		t.Fatal("view changed")
	}
	c.Release(id)
	if st := ts.stats(); st.UsedBytes != 0 || st.NumObjects != 0 {
		t.Fatalf("not freed at last release: %v", st)
	}
}

func TestBackpressureWaitsForDelete(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	big := newObjectID()
	if err := c.Put(bg, big, atollpb.Codec_CODEC_BYTES, make([]byte, 768<<10)); err != nil {
		t.Fatal(err)
	}
	type result struct {
		buf []byte
		err error
	}
	done := make(chan result, 1)
	next := newObjectID()
	go func() {
		buf, err := ts.client().Create(bg, next, 512<<10, atollpb.Codec_CODEC_BYTES)
		done <- result{buf, err}
	}()
	testutil.Eventually(t, "the creation to queue", func() bool { return ts.stats().PendingCreates == 1 })
	select {
	case r := <-done:
		t.Fatalf("creation did not wait: %v", r.err)
	default:
	}
	c.Delete(big)
	r := <-done
	if r.err != nil || len(r.buf) != 512<<10 {
		t.Fatalf("queued creation: %v (len %d)", r.err, len(r.buf))
	}
	if st := ts.stats(); st.UsedBytes != 512<<10 || st.PendingCreates != 0 || st.CreatedTotal != 2 {
		t.Fatalf("stats %v", st)
	}
}

func TestObjectStoreFullAfterTimeout(t *testing.T) {
	ts := startStore(t, 1<<20, Config{CreateTimeout: 50 * time.Millisecond})
	c := ts.client()
	if err := c.Put(bg, newObjectID(), atollpb.Codec_CODEC_BYTES, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	// Through the client, with the store's default timeout.
	start := time.Now()
	_, err := c.Create(bg, newObjectID(), 1, atollpb.Codec_CODEC_BYTES)
	var full *errs.ObjectStoreFullError
	if !errors.As(err, &full) || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	// Through the client, bounded by the context's deadline (long enough
	// that a loaded machine does not pass it before the store is asked).
	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel()
	if _, err := c.Create(ctx, newObjectID(), 1, atollpb.Codec_CODEC_BYTES); !errors.Is(err, errs.ErrObjectStoreFull) {
		t.Fatalf("with deadline: %v", err)
	}
	// On the wire: explicit timeout, and negative = fail at once.
	for _, ms := range []int64{50, -1} {
		res, err := ts.request(&atollpb.CreateObjectRequest{ObjectId: newObjectID().Bytes(), Size: 1, ClientId: c.ID().Bytes(), TimeoutMs: ms}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if e := res.(*atollpb.CreateObjectReply).Error; e.GetCode() != atollpb.ErrorCode_OBJECT_STORE_FULL {
			t.Fatalf("timeout_ms %d: reply error %v", ms, e)
		}
	}
	if st := ts.stats(); st.FailedCreatesTotal != 4 || st.PendingCreates != 0 {
		t.Fatalf("stats %v", st)
	}
}

func TestCancelledCreateIsWithdrawn(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	if err := c.Put(bg, newObjectID(), atollpb.Codec_CODEC_BYTES, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, newObjectID(), 1, atollpb.Codec_CODEC_BYTES)
		done <- err
	}()
	testutil.Eventually(t, "the creation to queue", func() bool { return ts.stats().PendingCreates == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Create: %v", err)
	}
	testutil.Eventually(t, "the creation to be withdrawn", func() bool { return ts.stats().PendingCreates == 0 })
}
