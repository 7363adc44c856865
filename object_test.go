package atoll_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

type point struct {
	X, Y int
	Tag  string
}

func TestPutGetRoundTripsEveryCodec(t *testing.T) {
	ctx := start(t)
	checkRoundTrip(t, ctx, 42)
	checkRoundTrip(t, ctx, "hello")
	checkRoundTrip(t, ctx, point{1, 2, "p"})
	ref, err := atoll.Put(ctx, &atollpb.NodeInfo{Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := atoll.Get(ctx, ref)
	if err != nil || msg.Hostname != "h" {
		t.Fatalf("proto round trip: %v %v", msg, err)
	}
	small := []int64{1, 2, 3}
	sref, _ := atoll.Put(ctx, small)
	got, err := atoll.Get(ctx, sref)
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Fatalf("small slice: %v %v", got, err)
	}
}

func checkRoundTrip[T comparable](t *testing.T, ctx context.Context, v T) {
	t.Helper()
	ref, err := atoll.Put(ctx, v)
	if err != nil {
		t.Fatalf("Put(%v): %v", v, err)
	}
	got, err := atoll.Get(ctx, ref)
	if err != nil || got != v {
		t.Fatalf("Get: %v %v, want %v", got, err, v)
	}
}

func TestLargeSliceGetCopiesAndGetViewIsZeroCopy(t *testing.T) {
	ctx := start(t)
	xs := make([]float64, 1<<20) // 8 MiB: stored in shared memory
	for i := range xs {
		xs[i] = float64(i)
	}
	ref, err := atoll.Put(ctx, xs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := atoll.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	b, err := atoll.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(a) == unsafe.SliceData(b) || unsafe.SliceData(a) == unsafe.SliceData(xs) {
		t.Fatal("Get returned shared memory, not the caller's own copy")
	}
	a[12345] = -1 // the caller's own: writing it changes nothing stored
	v1, err := atoll.GetView(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Release()
	v2, err := atoll.GetView(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(v1.Slice()) != unsafe.SliceData(v2.Slice()) {
		t.Fatal("two GetViews of one stored object returned different memory: GetView copied")
	}
	if v := v1.Slice(); v[12345] != 12345 || len(v) != len(xs) || b[12345] != 12345 {
		t.Fatalf("view holds wrong data: len %d, v[12345]=%v, b[12345]=%v", len(v), v[12345], b[12345])
	}
	v2.Release()
	if v2.Slice() != nil || v2.Len() != 0 {
		t.Fatal("a released View still returns its slice")
	}
	built, err := atoll.PutWith(ctx, 1<<20, func(v []int64) {
		for i := range v {
			v[i] = int64(2 * i)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := atoll.Get(ctx, built)
	if err != nil || vs[100] != 200 {
		t.Fatalf("PutWith: %v %v", vs[100], err)
	}
	runtime.KeepAlive(ref)
}

func TestStoreUsageReturnsToZeroAfterRefsAreDropped(t *testing.T) {
	ctx := start(t)
	func() {
		for range 8 {
			ref, err := atoll.Put(ctx, make([]byte, 4<<20))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := atoll.Get(ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
		explicit, err := atoll.Put(ctx, make([]byte, 4<<20))
		if err != nil {
			t.Fatal(err)
		}
		explicit.Release()
	}()
	testutil.Eventually(t, "store usage to return to zero", func() bool {
		runtime.GC()
		m, err := atolltest.Memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m.StoreUsed == 0 && m.StoreObjects == 0 && m.OwnedObjects == 0
	})
}

func TestStoreFullBackpressureThenObjectStoreFull(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20), atoll.WithStoreFullTimeout(30*time.Second), atoll.WithoutSpilling())
	first, err := atoll.Put(ctx, make([]byte, 12<<20))
	if err != nil {
		t.Fatal(err)
	}
	type putResult struct {
		ref atoll.ObjectRef[[]byte]
		err error
	}
	done := make(chan putResult, 1)
	go func() {
		ref, err := atoll.Put(ctx, make([]byte, 8<<20))
		done <- putResult{ref, err}
	}()
	testutil.Eventually(t, "the second put to wait for space", func() bool {
		m, err := atolltest.Memory(ctx)
		return err == nil && m.PendingCreates == 1
	})
	first.Release()
	second := <-done
	if second.err != nil {
		t.Fatalf("a put that waited for space failed: %v", second.err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = atoll.Put(short, make([]byte, 12<<20))
	var full *atoll.ObjectStoreFullError
	if !errors.As(err, &full) || !errors.Is(err, atoll.ErrObjectStoreFull) {
		t.Fatalf("want ObjectStoreFull, got %v", err)
	}
	runtime.KeepAlive(second.ref)
}

func TestGetTimeoutAndWait(t *testing.T) {
	ctx := start(t)
	key := newChanKey(t)
	ref := blockUntil.Remote(ctx, atoll.Value(key))
	quick := double.Remote(ctx, atoll.Value(21))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := atoll.Get(short, ref); !errors.Is(err, atoll.ErrGetTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want GetTimeout, got %v", err)
	}
	ready, notReady, err := atoll.Wait(ctx, []atoll.Ref{ref, quick})
	if err != nil || len(ready) != 1 || ready[0].ID() != quick.ID() || len(notReady) != 1 {
		t.Fatalf("Wait: ready %v notReady %v err %v", ready, notReady, err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	ready, _, err = atoll.Wait(short2, []atoll.Ref{ref, quick}, atoll.NumReady(2))
	if err != nil || len(ready) != 1 {
		t.Fatalf("Wait with a deadline: %v %v", ready, err)
	}
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}, atoll.NumReady(2)); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Wait numReady > len: %v", err)
	}
	close(key.ch())
	if v, err := atoll.Get(ctx, ref); err != nil || v != "released" {
		t.Fatalf("blocked task: %v %v", v, err)
	}
}

func TestNotInitialized(t *testing.T) {
	if _, err := atoll.Put(context.Background(), 1); !errors.Is(err, atoll.ErrNotInitialized) {
		t.Fatalf("Put before Init: %v", err)
	}
	ref := double.Remote(context.Background(), atoll.Value(1))
	if _, err := atoll.Get(context.Background(), ref); !errors.Is(err, atoll.ErrNotInitialized) {
		t.Fatalf("Remote before Init: %v", err)
	}
	var zero atoll.ObjectRef[int]
	if _, err := atoll.Get(context.Background(), zero); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Get of a zero ref: %v", err)
	}
}

func TestInitTwiceFails(t *testing.T) {
	ctx := start(t)
	if err := atoll.Init(ctx); !errors.Is(err, atoll.ErrAlreadyStarted) {
		t.Fatalf("second Init: %v", err)
	}
}

func TestFailNextCreates(t *testing.T) {
	ctx := start(t)
	if err := atolltest.FailNextCreates(ctx, 2); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 1<<20) // stored, not inline
	for i := range 2 {
		if _, err := atoll.Put(ctx, big); !errors.Is(err, atoll.ErrObjectStoreFull) {
			t.Fatalf("put %d: want an injected ObjectStoreFull, got %v", i, err)
		}
	}
	if _, err := atoll.Put(ctx, big); err != nil {
		t.Fatalf("third put: %v", err)
	}
	if _, err := atoll.Put(ctx, 1); err != nil {
		t.Fatalf("inline puts never touch the store: %v", err)
	}
}

func TestParseWorkerModeRoundTrips(t *testing.T) {
	for _, m := range []atoll.WorkerMode{atoll.ProcessWorkers, atoll.InProcessWorkers} {
		if got, err := atoll.ParseWorkerMode(m.String()); err != nil || got != m {
			t.Fatalf("%v: %v %v", m, got, err)
		}
	}
	if _, err := atoll.ParseWorkerMode("threads"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("bad mode: %v", err)
	}
}
