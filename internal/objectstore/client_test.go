package objectstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

func TestClientDisconnectedReclaims(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	owner, worker := ts.client(), ts.client()
	sealed := newObjectID()
	if err := owner.Put(bg, sealed, atollpb.Codec_CODEC_BYTES, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Get(bg, []ids.ObjectID{sealed, sealed}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Create(bg, newObjectID(), 5000, atollpb.Codec_CODEC_BYTES); err != nil {
		t.Fatal(err)
	}
	if st := ts.stats(); st.UsedBytes != 1024+5056 || st.PinnedBytes != 1024 || st.NumObjects != 2 {
		t.Fatalf("before disconnect: %v", st)
	}
	worker.Disconnect()
	if st := ts.stats(); st.UsedBytes != 1024 || st.PinnedBytes != 0 || st.NumObjects != 1 {
		t.Fatalf("after disconnect: %v", st)
	}
	owner.Delete(sealed)
	if st := ts.stats(); st.UsedBytes != 0 {
		t.Fatalf("after delete: %v", st)
	}
}

func TestRestartKeepsObjects(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	id := newObjectID()
	if err := c.Put(bg, id, atollpb.Codec_CODEC_FLOAT64, []byte("survives")); err != nil {
		t.Fatal(err)
	}
	filler := newObjectID()
	if err := c.Put(bg, filler, atollpb.Codec_CODEC_BYTES, make([]byte, 1<<20-64)); err != nil {
		t.Fatal(err)
	}
	// A creation waits for space across the restart.
	queued := ts.request(&atollpb.CreateObjectRequest{ObjectId: newObjectID().Bytes(), Size: 100, ClientId: c.ID().Bytes()})
	testutil.Eventually(t, "the creation to queue", func() bool { return ts.stats().PendingCreates == 1 })

	restarted := make(chan struct{}, 1)
	sub := ts.system.EventStream.Subscribe(func(msg any) {
		if ev, ok := msg.(*actor.SupervisorEvent); ok && ev.Child.Equal(ts.pid) && ev.Directive == actor.RestartDirective {
			select {
			case restarted <- struct{}{}:
			default:
			}
		}
	})
	defer ts.system.EventStream.Unsubscribe(sub)
	ts.system.Root.Send(ts.pid, &crashForTest{})
	<-restarted

	objs, err := c.Get(bg, []ids.ObjectID{id}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(objs[0].Data) != "survives" || objs[0].Codec != atollpb.Codec_CODEC_FLOAT64 {
		t.Fatalf("after restart: %+v", objs[0])
	}
	c.Release(id)
	c.Delete(filler)
	res, err := queued.Result()
	if err != nil {
		t.Fatal(err)
	}
	if reply := res.(*atollpb.CreateObjectReply); reply.Error != nil || reply.Location.GetLength() != 100 {
		t.Fatalf("queued creation after restart: %v", reply)
	}
	if st := ts.stats(); st.NumObjects != 2 || st.CreatedTotal != 3 {
		t.Fatalf("stats after restart %v", st)
	}
}

func TestGetWaitsForSeal(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	writer := ts.client()
	reader := NewClient(ts.system.Root, ts.pid, ts.arena, ids.NewWorkerID())
	id := newObjectID()
	// Sent before the object exists; the seal comes later from the same
	// goroutine, so the store sees the get first.
	fut := ts.request(&atollpb.GetObjectsRequest{ObjectIds: [][]byte{id.Bytes()}, ClientId: reader.ID().Bytes(), TimeoutMs: 10_000})
	if err := writer.Put(bg, id, atollpb.Codec_CODEC_BYTES, []byte("late")); err != nil {
		t.Fatal(err)
	}
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	reply := res.(*atollpb.GetObjectsReply)
	if reply.Error != nil || len(reply.Locations) != 1 || string(ts.arena.Bytes(reply.Locations[0].Offset, reply.Locations[0].Length)) != "late" {
		t.Fatalf("reply %v", reply)
	}
	if st := ts.stats(); st.PinnedBytes != 64 {
		t.Fatalf("waiting get did not pin: %v", st)
	}
	reader.Release(id)

	// Through the client: the Get may start before or after the seal.
	id2 := newObjectID()
	done := make(chan error, 1)
	go func() {
		objs, err := reader.Get(bg, []ids.ObjectID{id, id2}, 10*time.Second)
		if err == nil && string(objs[1].Data) != "later" {
			err = errors.New("wrong data " + string(objs[1].Data))
		}
		done <- err
	}()
	if err := writer.Put(bg, id2, atollpb.Codec_CODEC_BYTES, []byte("later")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reader.Release(id, id2)
	if st := ts.stats(); st.PinnedBytes != 0 {
		t.Fatalf("pins left: %v", st)
	}
}

func TestGetTimeout(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	have, missing := newObjectID(), newObjectID()
	if err := c.Put(bg, have, atollpb.Codec_CODEC_BYTES, []byte("x")); err != nil {
		t.Fatal(err)
	}
	list := [][]byte{have.Bytes(), missing.Bytes()}

	// timeout_ms 0: what is there, at once, no error.
	res, err := ts.request(&atollpb.GetObjectsRequest{ObjectIds: list, ClientId: c.ID().Bytes()}).Result()
	if err != nil {
		t.Fatal(err)
	}
	reply := res.(*atollpb.GetObjectsReply)
	if reply.Error != nil || len(reply.Locations[0].ObjectId) == 0 || len(reply.Locations[1].ObjectId) != 0 {
		t.Fatalf("immediate get: %v", reply)
	}
	c.Release(have)

	// timeout_ms > 0: the sealed one pinned, the missing one empty, GET_TIMEOUT.
	start := time.Now()
	res, err = ts.request(&atollpb.GetObjectsRequest{ObjectIds: list, ClientId: c.ID().Bytes(), TimeoutMs: 50}).Result()
	if err != nil {
		t.Fatal(err)
	}
	reply = res.(*atollpb.GetObjectsReply)
	if reply.Error.GetCode() != atollpb.ErrorCode_GET_TIMEOUT || len(reply.Locations[0].ObjectId) == 0 || len(reply.Locations[1].ObjectId) != 0 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("after %v: %v", time.Since(start), reply)
	}
	if st := ts.stats(); st.PinnedBytes != 64 {
		t.Fatalf("sealed object not pinned: %v", st)
	}
	c.Release(have)

	// Through the client: a typed error, and no pins left behind.
	_, err = c.Get(bg, []ids.ObjectID{have, missing}, 50*time.Millisecond)
	var gt *errs.GetTimeoutError
	if !errors.As(err, &gt) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client get: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, []ids.ObjectID{missing}, time.Hour); !errors.Is(err, errs.ErrGetTimeout) {
		t.Fatalf("client get with deadline: %v", err)
	}
	testutil.Eventually(t, "pins to be released", func() bool { return ts.stats().PinnedBytes == 0 })
}

func TestCancelledGetReleasesPins(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	have, missing := newObjectID(), newObjectID()
	if err := c.Put(bg, have, atollpb.Codec_CODEC_BYTES, []byte("x")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, []ids.ObjectID{have, missing}, 10*time.Second)
		done <- err
	}()
	testutil.Eventually(t, "the get to pin", func() bool { return ts.stats().PinnedBytes == 64 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled get: %v", err)
	}
	// The store still answers when the object appears; the client gives the
	// pins back.
	if err := c.Put(bg, missing, atollpb.Codec_CODEC_BYTES, []byte("y")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "pins to be released", func() bool { return ts.stats().PinnedBytes == 0 })
}

func TestClientDisconnectFailsWaitingGet(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	fut := ts.request(&atollpb.GetObjectsRequest{ObjectIds: [][]byte{newObjectID().Bytes()}, ClientId: c.ID().Bytes(), TimeoutMs: 10_000})
	c.Disconnect()
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	if e := res.(*atollpb.GetObjectsReply).Error; e.GetCode() != atollpb.ErrorCode_UNAVAILABLE {
		t.Fatalf("reply error %v", e)
	}
}

func TestReleaseFreedMemory(t *testing.T) {
	ts := startStore(t, 4<<20, Config{ReleaseFreedMemory: true})
	c := ts.client()
	big, small := newObjectID(), newObjectID()
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = 0xEE
	}
	if err := c.Put(bg, small, atollpb.Codec_CODEC_BYTES, data[:4096]); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, big, atollpb.Codec_CODEC_BYTES, data); err != nil {
		t.Fatal(err)
	}
	c.Delete(big, small)
	ts.stats() // the deletes are processed
	if b := ts.arena.Bytes(4096, 2<<20); b[0] != 0 || b[len(b)-1] != 0 {
		t.Fatal("freed 2 MiB block still holds its bytes: no hole punched")
	}
	if b := ts.arena.Bytes(0, 4096); b[0] != 0xEE {
		t.Fatal("small freed block was released (below the 1 MiB threshold)")
	}
}

func TestBadRequests(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	for _, req := range []any{
		&atollpb.CreateObjectRequest{ObjectId: []byte{1}, ClientId: c.ID().Bytes()},
		&atollpb.CreateObjectRequest{ObjectId: make([]byte, ids.ObjectIDLen), ClientId: c.ID().Bytes()},
		&atollpb.SealObjectRequest{ObjectId: newObjectID().Bytes(), ClientId: []byte{1}},
		&atollpb.GetObjectsRequest{ObjectIds: [][]byte{{1}}, ClientId: c.ID().Bytes()},
	} {
		res, err := ts.request(req).Result()
		if err != nil {
			t.Fatal(err)
		}
		var info *atollpb.ErrorInfo
		switch r := res.(type) {
		case *atollpb.CreateObjectReply:
			info = r.Error
		case *atollpb.SealObjectReply:
			info = r.Error
		case *atollpb.GetObjectsReply:
			info = r.Error
		}
		if info.GetCode() != atollpb.ErrorCode_INVALID_ARGUMENT {
			t.Errorf("%T: error %v", req, info)
		}
	}
	if err := c.Seal(bg, newObjectID()); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("seal of unknown object: %v", err)
	}
	if err := c.Abort(bg, newObjectID()); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("abort of unknown object: %v", err)
	}
	id := newObjectID()
	if _, err := c.Create(bg, id, 10, atollpb.Codec_CODEC_BYTES); err != nil {
		t.Fatal(err)
	}
	if err := c.Abort(bg, id); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Stats(bg); err != nil || st.UsedBytes != 0 {
		t.Fatalf("stats %v %v", st, err)
	}
}

func TestPropsSpawnedTwice(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	id := newObjectID()
	if err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, []byte("x")); err != nil {
		t.Fatal(err)
	}
	second := ts.system.Root.Spawn(ts.props)
	testutil.Eventually(t, "the second store actor to stop", func() bool {
		_, alive := ts.system.ProcessRegistry.GetLocal(second.Id)
		return !alive
	})
	if objs, err := c.Get(bg, []ids.ObjectID{id}, 0); err != nil || string(objs[0].Data) != "x" {
		t.Fatalf("first store disturbed: %v", err)
	}
}

func TestStopAnswersWaitersAndRespawnAdoptsObjects(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	c := ts.client()
	have := newObjectID()
	if err := c.Put(bg, have, atollpb.Codec_CODEC_BYTES, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	create := ts.request(&atollpb.CreateObjectRequest{ObjectId: newObjectID().Bytes(), Size: 1, ClientId: c.ID().Bytes()})
	get := ts.request(&atollpb.GetObjectsRequest{ObjectIds: [][]byte{have.Bytes(), newObjectID().Bytes()}, ClientId: c.ID().Bytes(), TimeoutMs: 10_000})
	testutil.Eventually(t, "the waiting get to pin", func() bool { return ts.stats().PinnedBytes > 0 })
	if err := ts.system.Root.StopFuture(ts.pid).Wait(); err != nil {
		t.Fatal(err)
	}
	res, err := create.Result()
	if err != nil {
		t.Fatal(err)
	}
	if e := res.(*atollpb.CreateObjectReply).Error; e.GetCode() != atollpb.ErrorCode_UNAVAILABLE {
		t.Fatalf("queued create: %v", e)
	}
	res, err = get.Result()
	if err != nil {
		t.Fatal(err)
	}
	if e := res.(*atollpb.GetObjectsReply).Error; e.GetCode() != atollpb.ErrorCode_UNAVAILABLE {
		t.Fatalf("waiting get: %v", e)
	}
	if _, err := c.Stats(bg); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("stats of a stopped store: %v", err)
	}
	if _, err := c.Get(bg, []ids.ObjectID{have}, 0); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("get from a stopped store: %v", err)
	}
	// Spawned again (as a restarting parent would), the store adopts its
	// objects; the stopped one's waiters left no pins and no queue behind.
	ts.pid = ts.system.Root.Spawn(ts.props)
	if st := ts.stats(); st.NumObjects != 1 || st.PinnedBytes != 0 || st.PendingCreates != 0 {
		t.Fatalf("stats after re-spawn: %v", st)
	}
	c = NewClient(ts.system.Root, ts.pid, c.arena, c.ID())
	objs, err := c.Get(bg, []ids.ObjectID{have}, 0)
	if err != nil || len(objs[0].Data) != 1<<20 {
		t.Fatalf("get after re-spawn: %v", err)
	}
	c.Release(have)
}
