package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

var (
	// holdOrPass returns x once the channel of key is closed (it never is
	// in a worker process: there it waits for its context) or at once
	// when key is "".
	holdOrPass = atoll.NewFunc2("wait.holdOrPass", func(ctx context.Context, key string, x int) (int, error) {
		if key == "" {
			return x, nil
		}
		<-ctx.Done()
		return 0, ctx.Err()
	})
	// untilCancelled writes "started" to path, waits for its context and
	// then writes "cancelled" to path+".cancelled".
	untilCancelled = atoll.NewFunc1("wait.untilCancelled", func(ctx context.Context, path string) (int, error) {
		if err := os.WriteFile(path, []byte("started"), 0o600); err != nil {
			return 0, err
		}
		<-ctx.Done()
		return 0, os.WriteFile(path+".cancelled", []byte("cancelled"), 0o600)
	})
	// parentOf submits untilCancelled(path) with its own context and
	// waits for it.
	parentOf = atoll.NewFunc1("wait.parentOf", func(ctx context.Context, path string) (int, error) {
		return atoll.Get(ctx, untilCancelled.Remote(ctx, atoll.Value(path)))
	})
	// untilGo writes "started" to path, then waits for path+".go" to
	// exist (writing path+".done") or for its context (writing
	// path+".cancelled").
	untilGo = atoll.NewFunc1("wait.untilGo", func(ctx context.Context, path string) (int, error) {
		if err := os.WriteFile(path, []byte("started"), 0o600); err != nil {
			return 0, err
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return 0, os.WriteFile(path+".cancelled", []byte("cancelled"), 0o600)
			case <-tick.C:
				if _, err := os.Stat(path + ".go"); err == nil {
					return 1, os.WriteFile(path+".done", []byte("done"), 0o600)
				}
			}
		}
	})
	// parentOfUntilGo submits untilGo(path) with its own context, waits
	// for its own context to end and writes the cause to path+".cause".
	parentOfUntilGo = atoll.NewFunc1("wait.parentOfUntilGo", func(ctx context.Context, path string) (int, error) {
		child := untilGo.Remote(ctx, atoll.Value(path))
		<-ctx.Done()
		_ = os.WriteFile(path+".cause", []byte(context.Cause(ctx).Error()), 0o600)
		_ = child // dropped: the child runs on without a ref to it
		return 0, ctx.Err()
	})
	// ignoresContext writes its pid to path and blocks for good,
	// whatever its context says.
	ignoresContext = atoll.NewFunc1("wait.ignoresContext", func(_ context.Context, path string) (int, error) {
		if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return 0, err
		}
		<-make(chan struct{})
		return 0, nil
	})
	// viewSum sums the first ref's object through a zero-copy view it
	// drops without Release, and through Get.
	viewSum = atoll.NewFunc1("wait.viewSum", func(ctx context.Context, refs []atoll.ObjectRef[[]float64]) (float64, error) {
		v, err := atoll.GetView(ctx, refs[0])
		if err != nil {
			return 0, err
		}
		xs, err := atoll.Get(ctx, refs[0])
		if err != nil {
			return 0, err
		}
		var s float64
		for i, x := range v.Slice() {
			s += x + xs[i]
		}
		return s, nil
	})
)

func TestWaitTypedNumReadyAndDeadline(t *testing.T) {
	ctx := startProcesses(t, atoll.WithNumCPUs(4)) // two held tasks, two that pass
	refs := []atoll.ObjectRef[int]{
		holdOrPass.Remote(ctx, atoll.Value("hold"), atoll.Value(0)),
		holdOrPass.Remote(ctx, atoll.Value(""), atoll.Value(1)),
		holdOrPass.Remote(ctx, atoll.Value("hold"), atoll.Value(2)),
		holdOrPass.Remote(ctx, atoll.Value(""), atoll.Value(3)),
	}
	// Default NumReady is 1, as Ray's.
	ready, notReady, err := atoll.Wait(ctx, refs)
	if err != nil || len(ready) != 1 || len(notReady) != 3 {
		t.Fatalf("Wait: %d ready, %d not, %v; want 1 and 3", len(ready), len(notReady), err)
	}
	if v, err := atoll.Get(ctx, ready[0]); err != nil || v%2 != 1 {
		t.Fatalf("the ready ref is a held task: %v %v", v, err)
	}
	// Two finish; the context's deadline ends a wait for three, without
	// an error: the held ones are the rest, in input order.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	ready, notReady, err = atoll.Wait(short, refs, atoll.NumReady(3), atoll.FetchLocal(false))
	if err != nil {
		t.Fatalf("Wait past its deadline: %v, want no error", err)
	}
	if len(ready) != 2 || ready[0] != refs[1] || ready[1] != refs[3] || len(notReady) != 2 || notReady[0] != refs[0] || notReady[1] != refs[2] {
		t.Fatalf("Wait past its deadline: ready %v, not ready %v", ready, notReady)
	}
	// NumReady bounds the ready list; the others come back not ready.
	ready, notReady, err = atoll.Wait(ctx, []atoll.ObjectRef[int]{refs[1], refs[3]}, atoll.NumReady(1))
	if err != nil || len(ready) != 1 || ready[0] != refs[1] || len(notReady) != 1 {
		t.Fatalf("NumReady(1) of two ready: %v %v %v", ready, notReady, err)
	}
	// A cancelled context is an error.
	cancelled, stop := context.WithCancel(ctx)
	stop()
	if _, _, err := atoll.Wait(cancelled, refs, atoll.NumReady(4)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
	for _, n := range []int{0, 5, -1} {
		if _, _, err := atoll.Wait(ctx, refs, atoll.NumReady(n)); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Fatalf("NumReady(%d) of 4: %v, want ErrInvalidArgument", n, err)
		}
	}
	if ready, notReady, err := atoll.Wait(ctx, []atoll.ObjectRef[int]{}); err != nil || len(ready)+len(notReady) != 0 {
		t.Fatalf("Wait of nothing: %v %v %v", ready, notReady, err)
	}
}

func TestWaitRejectsZeroAndReleasedRefs(t *testing.T) {
	ctx := start(t)
	good, err := atoll.Put(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var zero atoll.ObjectRef[int]
	_, _, err = atoll.Wait(ctx, []atoll.ObjectRef[int]{good, zero})
	if !errors.Is(err, atoll.ErrZeroRef) || !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "refs[1]") {
		t.Fatalf("Wait with a zero ref: %v, want ErrZeroRef naming refs[1]", err)
	}
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{good, nil}); !errors.Is(err, atoll.ErrZeroRef) {
		t.Fatalf("Wait with a nil Ref: %v, want ErrZeroRef", err)
	}
	if _, err := atoll.GetValues(ctx, []atoll.Ref{good, zero}); !errors.Is(err, atoll.ErrZeroRef) {
		t.Fatalf("GetValues with a zero ref: %v, want ErrZeroRef", err)
	}
	if _, err := atoll.GetAll(ctx, []atoll.ObjectRef[int]{zero}); !errors.Is(err, atoll.ErrZeroRef) {
		t.Fatalf("GetAll with a zero ref: %v, want ErrZeroRef", err)
	}
	if err := atoll.Cancel(ctx, zero); !errors.Is(err, atoll.ErrZeroRef) {
		t.Fatalf("Cancel of a zero ref: %v, want ErrZeroRef", err)
	}
	released, _ := atoll.Put(ctx, 2)
	released.Release()
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{released}); !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "after Release") {
		t.Fatalf("Wait with a released ref: %v", err)
	}
}

func TestWaitAndGetValuesOfMixedTypes(t *testing.T) {
	ctx := startProcesses(t)
	n := holdOrPass.Remote(ctx, atoll.Value(""), atoll.Value(7))
	s, err := atoll.Put(ctx, "seven")
	if err != nil {
		t.Fatal(err)
	}
	big, err := atoll.Put(ctx, make([]float64, 1<<16)) // 512 KiB: in the store
	if err != nil {
		t.Fatal(err)
	}
	held := holdOrPass.Remote(ctx, atoll.Value("hold"), atoll.Value(0))
	refs := []atoll.Ref{n, s, big, held}
	ready, notReady, err := atoll.Wait(ctx, refs, atoll.NumReady(3))
	if err != nil || len(ready) != 3 || len(notReady) != 1 || notReady[0] != atoll.Ref(held) {
		t.Fatalf("Wait of mixed refs: ready %v, not ready %v, %v", ready, notReady, err)
	}
	vals, err := atoll.GetValues(ctx, ready)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := vals[0].(int); !ok || v != 7 {
		t.Fatalf("value 0: %T %v, want int 7", vals[0], vals[0])
	}
	if v, ok := vals[1].(string); !ok || v != "seven" {
		t.Fatalf("value 1: %T %v, want string seven", vals[1], vals[1])
	}
	if v, ok := vals[2].([]float64); !ok || len(v) != 1<<16 {
		t.Fatalf("value 2: %T of %d, want []float64 of %d", vals[2], len(v), 1<<16)
	}
	if err := atoll.Cancel(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.GetValues(ctx, refs); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("GetValues with a cancelled task among them: %v, want ErrCancelled", err)
	}
}

// TestCancelIsRecursive: cancelling a task cancels the child it
// submitted from its worker process (owned there, unknown to the driver).
func TestCancelIsRecursive(t *testing.T) {
	ctx := startProcesses(t)
	path := filepath.Join(t.TempDir(), "child")
	parent := parentOf.Remote(ctx, atoll.Value(path))
	testutil.Eventually(t, "the parent's child to start", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	if err := atoll.Cancel(ctx, parent); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, parent); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("the cancelled parent: %v, want ErrCancelled", err)
	}
	testutil.Eventually(t, "the parent's child to see its context cancelled", func() bool {
		_, err := os.Stat(path + ".cancelled")
		return err == nil
	})
}

// TestCancelNonRecursive: cancelling a task alone (NonRecursive) cancels
// its context with the cause ErrCancelNonRecursive, and the child it
// submitted from its worker process runs on to its end.
func TestCancelNonRecursive(t *testing.T) { testCancelNonRecursive(t, startProcesses(t)) }

// TestCancelNonRecursiveGoroutines: the same with in-process workers,
// where the task's context is the raylet's and the child is owned by the
// driver.
func TestCancelNonRecursiveGoroutines(t *testing.T) { testCancelNonRecursive(t, start(t)) }

func testCancelNonRecursive(t *testing.T, ctx context.Context) {
	path := filepath.Join(t.TempDir(), "child")
	parent := parentOfUntilGo.Remote(ctx, atoll.Value(path))
	testutil.Eventually(t, "the parent's child to start", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	if err := atoll.Cancel(ctx, parent, atoll.NonRecursive()); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, parent); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("the cancelled parent: %v, want ErrCancelled", err)
	}
	testutil.Eventually(t, "the parent to record its context's cause", func() bool {
		_, err := os.Stat(path + ".cause")
		return err == nil
	})
	if b, _ := os.ReadFile(path + ".cause"); string(b) != atoll.ErrCancelNonRecursive.Error() {
		t.Fatalf("the parent's context cause: %q, want %q", b, atoll.ErrCancelNonRecursive)
	}
	// The child still runs: let it finish.
	if err := os.WriteFile(path+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the child to finish", func() bool {
		_, err := os.Stat(path + ".done")
		return err == nil
	})
	if _, err := os.Stat(path + ".cancelled"); err == nil {
		t.Fatal("the child of a task cancelled with NonRecursive was cancelled")
	}
}

// TestCancelRefusesForceNonRecursive: ForceCancel kills the process that
// owns the children, so it cannot be NonRecursive.
func TestCancelRefusesForceNonRecursive(t *testing.T) {
	ctx := startProcesses(t)
	ref := holdOrPass.Remote(ctx, atoll.Value(""), atoll.Value(1))
	err := atoll.Cancel(ctx, ref, atoll.ForceCancel(), atoll.NonRecursive())
	if !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Cancel with ForceCancel and NonRecursive: %v, want ErrInvalidArgument", err)
	}
}

// TestForceCancelKillsTheWorker: a task that ignores its context is
// stopped by killing its worker process, and is not retried.
func TestForceCancelKillsTheWorker(t *testing.T) {
	ctx := startProcesses(t)
	path := filepath.Join(t.TempDir(), "pid")
	ref := ignoresContext.Remote(ctx, atoll.Value(path))
	var pid int
	testutil.Eventually(t, "the task to start", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	})
	if err := atoll.Cancel(ctx, ref, atoll.ForceCancel()); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, ref); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("a force-cancelled task: %v, want ErrCancelled (not retried)", err)
	}
	testutil.Eventually(t, "the task's worker process to die", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

// TestViewStaysValidWithOnlyTheViewHeld holds nothing but a View across
// collections and Puts that reuse the freed memory: the view never
// changes. (Before views pinned their object, the block under a view from
// Get was freed once its ref was garbage and overwritten by a later Put.)
func TestViewStaysValidWithOnlyTheViewHeld(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(64<<20))
	const n = 1 << 20 // 8 MiB
	view := func() atoll.View[float64] {
		ref, err := atoll.PutWith(ctx, n, func(xs []float64) {
			for i := range xs {
				xs[i] = float64(i)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		v, err := atoll.GetView(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return v // ref is garbage from here on
	}()
	testutil.Eventually(t, "the store to hold only the viewed object", func() bool {
		m, err := atolltest.Memory(ctx)
		return err == nil && m.StoreObjects == 1
	})
	check := func(when string) {
		t.Helper()
		xs := view.Slice()
		if len(xs) != n {
			t.Fatalf("%s: view of %d elements, want %d", when, len(xs), n)
		}
		for i := 0; i < n; i += 997 {
			if xs[i] != float64(i) {
				t.Fatalf("%s: view[%d] = %v, want %v: its memory was reused", when, i, xs[i], float64(i))
			}
		}
	}
	for round := range 20 {
		runtime.GC()
		// Each Put fills a freed block with 7s; over 20 rounds they cycle
		// through the whole 64 MiB store.
		ref, err := atoll.PutWith(ctx, n, func(xs []float64) {
			for i := range xs {
				xs[i] = 7
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		ref.Release()
		check(fmt.Sprintf("round %d", round))
	}
	view.Release()
	testutil.Eventually(t, "the viewed object to be freed once released", func() bool {
		runtime.GC()
		m, err := atolltest.Memory(ctx)
		return err == nil && m.StoreObjects == 0 && m.StoreUsed == 0
	})
}

// TestTaskViewPinsEndWithTheTask: a task in a worker process reads an
// object through a View it drops without Release (and through Get). Once
// the task is done and the driver drops its ref, the object is freed
// promptly, not at the idle worker's next periodic GC minutes later.
func TestTaskViewPinsEndWithTheTask(t *testing.T) {
	ctx := startProcesses(t)
	func() {
		ref, err := atoll.PutWith(ctx, 1<<20, func(xs []float64) {
			for i := range xs {
				xs[i] = 1
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		s, err := atoll.Get(ctx, viewSum.Remote(ctx, atoll.Value([]atoll.ObjectRef[[]float64]{ref})))
		if err != nil || s != 2<<20 {
			t.Fatalf("viewSum: %v %v", s, err)
		}
		ref.Release()
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC()
		m, err := atolltest.Memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.StoreObjects == 0 && m.StorePinned == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20s after the task ended the store still holds %d objects, %d bytes pinned: the task's view pin outlived it", m.StoreObjects, m.StorePinned)
		}
		runtime.Gosched()
	}
}
