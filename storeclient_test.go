package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Abandoned store requests in worker processes: a creation cancelled while
// it waits for space and a Get that gives up while a restore waits for
// space must leave nothing behind in the store (no unsealed object, no pin)
// while the worker process lives on. Before the store client was shared,
// the worker dropped the late replies: the creation was granted and stayed
// unsealed, the restored object stayed pinned, until the worker died.

const mib = 1 << 20

// abandonProbe is what a probing task saw.
type abandonProbe struct {
	Err      string
	Canceled bool // errors.Is(err, context.Canceled)
	Deadline bool // errors.Is(err, context.DeadlineExceeded)
	Pid      int
}

// victimBox lends a ref to a task inside a value, so the task's arguments
// do not fetch (and restore) it before the function runs.
type victimBox struct{ Ref atoll.ObjectRef[[]byte] }

var (
	// cancelledCreate puts size bytes with a context it cancels once the
	// store has queued the creation (the store is full).
	cancelledCreate = atoll.NewFunc1("storeclient.cancelledCreate", func(ctx context.Context, size int) (abandonProbe, error) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := atoll.Put(cctx, make([]byte, size))
			errc <- err
		}()
		if err := awaitMemory(ctx, func(m atolltest.MemoryStats) bool { return m.PendingCreates == 1 }); err != nil {
			return abandonProbe{}, err
		}
		cancel()
		err := <-errc
		return abandonProbe{Err: fmt.Sprint(err), Canceled: errors.Is(err, context.Canceled), Pid: os.Getpid()}, nil
	})
	// shortGet gets the lent object with a short deadline.
	shortGet = atoll.NewFunc1("storeclient.shortGet", func(ctx context.Context, box victimBox) (abandonProbe, error) {
		gctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		v, err := atoll.Get(gctx, box.Ref)
		if err == nil {
			return abandonProbe{}, fmt.Errorf("get of an object whose restore cannot fit returned %d bytes", len(v))
		}
		return abandonProbe{Err: err.Error(), Deadline: errors.Is(err, context.DeadlineExceeded), Pid: os.Getpid()}, nil
	})
)

// awaitMemory polls the store's statistics until cond holds or ctx ends.
func awaitMemory(ctx context.Context, cond func(atolltest.MemoryStats) bool) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		m, err := atolltest.Memory(ctx)
		if err != nil {
			return err
		}
		if cond(m) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store never got there (last %+v): %w", m, ctx.Err())
		case <-tick.C:
		}
	}
}

func memoryNow(t *testing.T, ctx context.Context) atolltest.MemoryStats {
	t.Helper()
	m, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkAlive fails the test if the worker process is gone: its death would
// have reclaimed everything it held, so the test would prove nothing.
func checkAlive(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("worker process %d is gone (%v): the store reclaimed its grants on its death, which is not what this test checks", pid, err)
	}
}

func TestWorkerCancelledCreateLeavesNothing(t *testing.T) {
	// No spilling: a creation that does not fit waits for frees. The
	// store's own deadline (a minute) is far beyond the test.
	ctx := startProcesses(t, atoll.WithObjectStoreMemory(32*mib), atoll.WithoutSpilling(),
		atoll.WithStoreFullTimeout(time.Minute), atoll.WithNumCPUs(1))
	filler, err := atoll.Put(ctx, make([]byte, 30*mib))
	if err != nil {
		t.Fatal(err)
	}
	probe, err := atoll.Get(ctx, cancelledCreate.Remote(ctx, atoll.Value(8*mib)))
	if err != nil {
		t.Fatal(err)
	}
	if !probe.Canceled {
		t.Fatalf("the cancelled Put in the worker returned %q, want context.Canceled", probe.Err)
	}
	// Room appears: a creation still queued in the store would now be
	// granted, to nobody.
	filler.Release()
	var last atolltest.MemoryStats
	defer func() {
		if t.Failed() {
			t.Logf("last store stats: %+v", last)
		}
	}()
	testutil.Eventually(t, "an empty store (no unsealed object, no queued creation)", func() bool {
		m := memoryNow(t, ctx)
		last = m
		return m.StoreObjects == 0 && m.StoreUsed == 0 && m.PendingCreates == 0
	})
	checkAlive(t, probe.Pid)
}

func TestWorkerTimedOutGetLeavesNoPin(t *testing.T) {
	ctx := startProcesses(t, atoll.WithObjectStoreMemory(32*mib), atoll.WithStoreFullTimeout(time.Minute), atoll.WithNumCPUs(1))
	data := make([]byte, 8*mib)
	for i := range data {
		data[i] = byte(i * 7)
	}
	victim, err := atoll.Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	// Four pinned fillers take 28 MiB: the victim is spilled to make room,
	// and its restore (8 MiB) cannot fit until a filler goes.
	var fillers []atoll.ObjectRef[[]byte]
	var views []atoll.View[byte]
	for range 4 {
		f, err := atoll.Put(ctx, make([]byte, 7*mib))
		if err != nil {
			t.Fatal(err)
		}
		v, err := atoll.GetView(ctx, f) // pinned until the view is released
		if err != nil {
			t.Fatal(err)
		}
		fillers, views = append(fillers, f), append(views, v)
	}
	testutil.Eventually(t, "the victim to be spilled and the fillers pinned in memory", func() bool {
		m := memoryNow(t, ctx)
		return m.SpilledBytesCurrent >= 8*mib && m.StoreUsed == 28*mib && m.StorePinned == 28*mib
	})
	probe, err := atoll.Get(ctx, shortGet.Remote(ctx, atoll.Value(victimBox{victim})))
	if err != nil {
		t.Fatal(err)
	}
	if !probe.Deadline {
		t.Fatalf("the short Get in the worker returned %q, want a timeout", probe.Err)
	}
	// Room appears: the restore the worker's Get started completes and
	// pins the victim for a Get nobody waits for anymore.
	restored := memoryNow(t, ctx).RestoredBytesTotal
	for i, f := range fillers {
		views[i].Release()
		f.Release()
	}
	var last atolltest.MemoryStats
	defer func() {
		if t.Failed() {
			t.Logf("last store stats: %+v", last)
		}
	}()
	testutil.Eventually(t, "the restore, and no pin left", func() bool {
		m := memoryNow(t, ctx)
		last = m
		return m.RestoredBytesTotal >= restored+8*mib && m.StorePinned == 0
	})
	checkAlive(t, probe.Pid)
	got, err := atoll.Get(ctx, victim)
	if err != nil || len(got) != len(data) || got[12345] != data[12345] {
		t.Fatalf("victim after restore: %d bytes, %v", len(got), err)
	}
}
