package objectstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/testutil"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// The Client's abandon logic over both transports, against the real store
// actor: the mailbox as the node's own components use it, and workerconn
// frames over a real unix socket pair whose far end is served by the
// FrameServer the raylet uses for its worker processes.

// workerLink is a worker's side of a socket pair served by a FrameServer.
type workerLink struct {
	id     ids.WorkerID
	worker *workerconn.Conn // the worker's end
	raylet *workerconn.Conn // the raylet's end, served by server
	server *FrameServer
}

// linkWorker connects a new worker to the store through a socket pair and
// a FrameServer.
func linkWorker(t *testing.T, ts *testStore) *workerLink {
	t.Helper()
	raylet, worker := testutil.SocketPair(t)
	wl := &workerLink{id: ids.NewWorkerID()}
	wl.server = &FrameServer{Root: ts.system.Root, Store: ts.pid, Client: wl.id, Log: slog.New(slog.DiscardHandler)}
	ready := make(chan struct{})
	wl.raylet = workerconn.New(raylet, func(f *atollpb.Frame) {
		<-ready
		if !wl.server.Serve(wl.raylet, f) {
			t.Errorf("raylet end got a frame that is not for the store: %v", f)
		}
	})
	close(ready)
	wl.worker = workerconn.New(worker, func(f *atollpb.Frame) {
		t.Errorf("worker end got a frame that is not a reply: %v", f)
	})
	t.Cleanup(func() {
		wl.worker.Close()
		wl.raylet.Close()
		<-wl.worker.Done()
		<-wl.raylet.Done()
	})
	return wl
}

type transportCase struct {
	name string
	// client returns a new client of the store with its own mapping.
	client func(t *testing.T, ts *testStore) *Client
}

var transportCases = []transportCase{
	{"mailbox", func(t *testing.T, ts *testStore) *Client { return ts.client() }},
	{"frames", func(t *testing.T, ts *testStore) *Client {
		wl := linkWorker(t, ts)
		return NewTransportClient(NewFrameTransport(wl.worker), openSecondMapping(t, ts.arena), wl.id)
	}},
}

func forEachTransport(t *testing.T, test func(t *testing.T, newClient func(*testStore) *Client)) {
	for _, tc := range transportCases {
		t.Run(tc.name, func(t *testing.T) {
			test(t, func(ts *testStore) *Client { return tc.client(t, ts) })
		})
	}
}

func TestTransportRoundTripAndTypedErrors(t *testing.T) {
	forEachTransport(t, func(t *testing.T, newClient func(*testStore) *Client) {
		ts := startStore(t, 1<<20, Config{})
		c := newClient(ts)
		id := newObjectID()
		buf, err := c.Create(bg, id, 5, atollpb.Codec_CODEC_BYTES)
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, "hello")
		if err := c.Seal(bg, id); err != nil {
			t.Fatal(err)
		}
		objs, err := c.Get(bg, []ids.ObjectID{id}, 0)
		if err != nil || string(objs[0].Data) != "hello" {
			t.Fatalf("get: %v %v", objs, err)
		}
		c.Release(id)
		if _, err := c.Create(bg, id, 5, atollpb.Codec_CODEC_BYTES); !errors.Is(err, ErrObjectExists) {
			t.Errorf("second create of one id: %v", err)
		}
		if err := c.Abort(bg, newObjectID()); !errors.Is(err, errs.ErrNotFound) {
			t.Errorf("abort of an unknown object: %v", err)
		}
		if _, err := c.Get(bg, []ids.ObjectID{newObjectID()}, 20*time.Millisecond); !errors.Is(err, errs.ErrGetTimeout) {
			t.Errorf("get of a missing object: %v", err)
		}
		ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		defer cancel()
		if _, err := c.Create(ctx, newObjectID(), 2<<20, atollpb.Codec_CODEC_BYTES); !errors.Is(err, errs.ErrObjectStoreFull) {
			t.Errorf("create that can never fit, with a deadline: %v", err)
		}
		c.Delete(id)
		st, err := c.Stats(bg)
		if err != nil || st.NumObjects != 0 || st.PinnedBytes != 0 || st.PendingCreates != 0 {
			t.Fatalf("stats at the end: %v %v", st, err)
		}
	})
}

// A creation queued on a full store whose caller gives up is withdrawn at
// once, and never granted later.
func TestAbandonedCreateIsWithdrawn(t *testing.T) {
	forEachTransport(t, func(t *testing.T, newClient func(*testStore) *Client) {
		ts := startStore(t, 1<<20, Config{CreateTimeout: time.Minute})
		owner, c := ts.client(), newClient(ts)
		filler := newObjectID()
		if err := owner.Put(bg, filler, atollpb.Codec_CODEC_BYTES, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() {
			_, err := c.Create(ctx, newObjectID(), 1000, atollpb.Codec_CODEC_BYTES)
			done <- err
		}()
		testutil.Eventually(t, "the creation to queue", func() bool { return ts.stats().PendingCreates == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled create: %v", err)
		}
		testutil.Eventually(t, "the creation to be withdrawn", func() bool { return ts.stats().PendingCreates == 0 })
		owner.Delete(filler)
		if st := ts.stats(); st.NumObjects != 0 || st.UsedBytes != 0 {
			t.Fatalf("after the filler went: %v", st)
		}
	})
}

// A Get cancelled while it waits for an object gives back the pins the
// store grants when the object comes.
func TestAbandonedGetReleasesPins(t *testing.T) {
	forEachTransport(t, func(t *testing.T, newClient func(*testStore) *Client) {
		ts := startStore(t, 1<<20, Config{})
		owner, c := ts.client(), newClient(ts)
		have, missing := newObjectID(), newObjectID()
		if err := owner.Put(bg, have, atollpb.Codec_CODEC_BYTES, []byte("x")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() {
			_, err := c.Get(ctx, []ids.ObjectID{have, missing}, time.Minute)
			done <- err
		}()
		testutil.Eventually(t, "the get to pin what is there", func() bool { return ts.stats().PinnedBytes == 64 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled get: %v", err)
		}
		if err := owner.Put(bg, missing, atollpb.Codec_CODEC_BYTES, []byte("y")); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the late pins to be released", func() bool { return ts.stats().PinnedBytes == 0 })
	})
}

// spilledVictim stores a 1 MiB object, then pins 1.5 MiB of others in a
// 2 MiB store: the victim is spilled and its restore cannot fit until the
// returned function frees the others.
func spilledVictim(t *testing.T, ts *testStore, owner *Client) (victim ids.ObjectID, data []byte, free func()) {
	t.Helper()
	victim, data = newObjectID(), bytes.Repeat([]byte("victim!!"), 1<<17)
	if err := owner.Put(bg, victim, atollpb.Codec_CODEC_BYTES, data); err != nil {
		t.Fatal(err)
	}
	var pinned []ids.ObjectID
	for range 2 {
		id := newObjectID()
		if err := owner.Put(bg, id, atollpb.Codec_CODEC_BYTES, make([]byte, 768<<10)); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.GetWithPriority(bg, []ids.ObjectID{id}, 0, PriorityGet); err != nil {
			t.Fatal(err)
		}
		pinned = append(pinned, id)
	}
	testutil.Eventually(t, "the victim to be spilled and the others pinned in memory", func() bool {
		st := ts.stats()
		return st.SpilledBytesCurrent >= 1<<20 && st.UsedBytes == 1536<<10 && st.PinnedBytes == 1536<<10
	})
	return victim, data, func() {
		owner.Release(pinned...)
		owner.Delete(pinned...)
	}
}

// A Get whose deadline passes while a restore waits for space gives back
// the pin the restore takes for it when space comes.
func TestTimedOutGetOfSpilledObjectReleasesPin(t *testing.T) {
	forEachTransport(t, func(t *testing.T, newClient func(*testStore) *Client) {
		ts := startStore(t, 2<<20, Config{SpillDirs: []string{t.TempDir()}, CreateTimeout: time.Minute})
		owner, c := ts.client(), newClient(ts)
		victim, data, free := spilledVictim(t, ts, owner)
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		if _, err := c.GetWithPriority(ctx, []ids.ObjectID{victim}, 0, PriorityGet); !errors.Is(err, errs.ErrGetTimeout) {
			t.Fatalf("get of a spilled object that cannot come back in time: %v", err)
		}
		restored := ts.stats().RestoredBytesTotal
		free()
		testutil.Eventually(t, "the restore, and no pin left", func() bool {
			st := ts.stats()
			return st.RestoredBytesTotal >= restored+1<<20 && st.PinnedBytes == 0
		})
		objs, err := owner.Get(bg, []ids.ObjectID{victim}, 0)
		if err != nil || !bytes.Equal(objs[0].Data, data) {
			t.Fatalf("victim after its restore: %v", err)
		}
		owner.Release(victim)
	})
}

// When the FrameServer gives up before the store answers (its wait is
// capped here), it answers the worker with UNAVAILABLE and gives back
// itself what the store grants later: it aborts a creation at once and
// releases a Get's pins.
func TestFrameServerGivesBackWhatItGaveUpOn(t *testing.T) {
	ts := startStore(t, 2<<20, Config{SpillDirs: []string{t.TempDir()}, CreateTimeout: time.Minute})
	owner := ts.client()
	victim, _, free := spilledVictim(t, ts, owner)
	wl := linkWorker(t, ts)
	wl.server.waitCap = 50 * time.Millisecond
	call := func(f *atollpb.Frame) *atollpb.Frame {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		// A raw call: the worker side gives nothing back.
		r, err := wl.worker.Call(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := call(&atollpb.Frame{Body: &atollpb.Frame_CreateObject{CreateObject: &atollpb.CreateObjectRequest{
		ObjectId: newObjectID().Bytes(), Size: 1 << 20, Codec: atollpb.Codec_CODEC_BYTES}}})
	if r.GetStatus().GetCode() != atollpb.ErrorCode_UNAVAILABLE {
		t.Fatalf("create the server gave up on: %v", r)
	}
	testutil.Eventually(t, "the creation to be withdrawn", func() bool { return ts.stats().PendingCreates == 0 })

	r = call(&atollpb.Frame{Body: &atollpb.Frame_GetObjects{GetObjects: &atollpb.GetObjectsRequest{
		ObjectIds: [][]byte{victim.Bytes()}, Priority: PriorityGet}}})
	if r.GetStatus().GetCode() != atollpb.ErrorCode_UNAVAILABLE {
		t.Fatalf("get the server gave up on: %v", r)
	}
	restored := ts.stats().RestoredBytesTotal
	free()
	testutil.Eventually(t, "the restore, and no pin left", func() bool {
		st := ts.stats()
		return st.RestoredBytesTotal >= restored+1<<20 && st.PinnedBytes == 0
	})
	// Only the victim stays (a freed filler may still be in a spill write).
	testutil.Eventually(t, "only the victim, sealed", func() bool {
		st := ts.stats()
		return st.NumObjects == 1 && st.NumSealed == 1 && st.PendingCreates == 0
	})
}

// Requests are forwarded in the order they arrive: an abort written right
// after a create is applied after it (the Client's withdrawal of a
// creation relies on it).
func TestFrameServerKeepsOrder(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	wl := linkWorker(t, ts)
	gone, cancel := context.WithCancel(bg)
	cancel()
	for range 50 {
		id := newObjectID()
		// Written, then abandoned at once (no reply awaited).
		_, _ = wl.worker.Call(gone, &atollpb.Frame{Body: &atollpb.Frame_CreateObject{CreateObject: &atollpb.CreateObjectRequest{ObjectId: id.Bytes(), Size: 100}}})
		if err := wl.worker.Send(&atollpb.Frame{Body: &atollpb.Frame_AbortObject{AbortObject: &atollpb.AbortObjectRequest{ObjectId: id.Bytes()}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A last round trip through the same connection: everything before it
	// reached the store.
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	r, err := wl.worker.Call(ctx, &atollpb.Frame{Body: &atollpb.Frame_StoreStats{StoreStats: &atollpb.StoreStatsRequest{}}})
	if err != nil {
		t.Fatal(err)
	}
	if st := r.GetStoreStatsReply(); st.GetNumObjects() != 0 || st.GetCreatedTotal() != 50 {
		t.Fatalf("creations aborted right after they were sent are still there: %v", st)
	}
}

// Requests are made as the worker, whatever client id the frame claims.
func TestFrameServerActsAsTheWorker(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	owner := ts.client()
	have := newObjectID()
	if err := owner.Put(bg, have, atollpb.Codec_CODEC_BYTES, []byte("x")); err != nil {
		t.Fatal(err)
	}
	wl := linkWorker(t, ts)
	other := owner.ID().Bytes()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	r, err := wl.worker.Call(ctx, &atollpb.Frame{Body: &atollpb.Frame_CreateObject{CreateObject: &atollpb.CreateObjectRequest{
		ObjectId: newObjectID().Bytes(), Size: 3, ClientId: other}}})
	if err != nil || r.GetCreateObjectReply().GetLocation().GetLength() != 3 {
		t.Fatalf("create: %v %v", r, err)
	}
	r, err = wl.worker.Call(ctx, &atollpb.Frame{Body: &atollpb.Frame_GetObjects{GetObjects: &atollpb.GetObjectsRequest{
		ObjectIds: [][]byte{have.Bytes()}, ClientId: other}}})
	if err != nil || len(r.GetGetObjectsReply().GetLocations()) != 1 {
		t.Fatalf("get: %v %v", r, err)
	}
	if st := ts.stats(); st.NumObjects != 2 || st.PinnedBytes != 64 {
		t.Fatalf("before the worker disconnects: %v", st)
	}
	// The worker's death reclaims both: they were the worker's.
	ts.system.Root.Send(ts.pid, &atollpb.ClientDisconnected{ClientId: wl.id.Bytes()})
	if st := ts.stats(); st.NumObjects != 1 || st.PinnedBytes != 0 {
		t.Fatalf("after the worker disconnected: %v", st)
	}
}

func TestFrameClientOnClosedConnection(t *testing.T) {
	ts := startStore(t, 1<<20, Config{})
	wl := linkWorker(t, ts)
	c := NewTransportClient(NewFrameTransport(wl.worker), openSecondMapping(t, ts.arena), wl.id)
	wl.raylet.Close()
	<-wl.worker.Done()
	if _, err := c.Create(bg, newObjectID(), 10, atollpb.Codec_CODEC_BYTES); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("create on a closed connection: %v", err)
	}
	if _, err := c.Stats(bg); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("stats on a closed connection: %v", err)
	}
}
