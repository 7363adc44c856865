package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Generator functions for the tests. They run in worker processes (a
// re-executed copy of this test binary) or on in-process workers.

// genItem is an item of the test generators: Pad makes every third one
// large enough for the shared-memory store (the others travel inline).
type genItem struct {
	I   int
	Pad []byte
}

func makeItem(i int) genItem {
	it := genItem{I: i}
	if i%3 == 2 {
		it.Pad = make([]byte, 200<<10)
		it.Pad[len(it.Pad)-1] = byte(i)
	}
	return it
}

type killGenArgs struct {
	Tracker string // tracker actor the first attempt registers its pid with
	N       int    // items in all
	KillAt  int    // the first attempt waits to be killed after this many
}

// gate is an actor tests wait on: open once told so; asks counts the
// IsOpen calls it answered (a task waiting on it asks every few ms).
type gate struct {
	open bool
	asks int
}

var (
	genCount = atoll.NewGenFunc1("gen.count", func(ctx context.Context, n int, yield func(genItem) error) error {
		for i := range n {
			if err := yield(makeItem(i)); err != nil {
				return err
			}
		}
		return nil
	})
	// genGated yields item 0, then waits for the gate actor to open
	// (it asks every few milliseconds) before it yields item 1.
	genGated = atoll.NewGenFunc1("gen.gated", func(ctx context.Context, gateName string, yield func(int) error) error {
		if err := yield(0); err != nil {
			return err
		}
		if err := waitGateActor(ctx, gateName, 5*time.Millisecond); err != nil {
			return err
		}
		return yield(1)
	})
	genFailAfter = atoll.NewGenFunc1("gen.failAfter", func(ctx context.Context, k int, yield func(genItem) error) error {
		for i := range k {
			if err := yield(makeItem(i)); err != nil {
				return err
			}
		}
		return fmt.Errorf("failed after %d items", k)
	})
	// genKillable yields KillAt items; its first attempt then registers
	// its pid and waits to be killed; a retry yields all N.
	genKillable = atoll.NewGenFunc1("gen.killable", func(ctx context.Context, a killGenArgs, yield func(genItem) error) error {
		for i := range a.KillAt {
			if err := yield(makeItem(i)); err != nil {
				return err
			}
		}
		t, err := atoll.GetActor[*tracker](ctx, a.Tracker)
		if err != nil {
			return err
		}
		n, err := atoll.Get(ctx, register.Remote(ctx, t, atoll.Value(os.Getpid())))
		if err != nil {
			return err
		}
		if n == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		for i := a.KillAt; i < a.N; i++ {
			if err := yield(makeItem(i)); err != nil {
				return err
			}
		}
		return nil
	})
	// genUntilCancelled yields one item, then waits for its context.
	genUntilCancelled = atoll.NewGenFunc0("gen.untilCancelled", func(ctx context.Context, yield func(int) error) error {
		if err := yield(7); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	})

	// genConsumer reads a generator from inside a task: the worker
	// process owns the stream (its items and acks go through the raylet
	// to and from that process).
	genConsumer = atoll.NewFunc1("gen.consumer", func(ctx context.Context, n int) (int, error) {
		sum := 0
		gen := genCount.Remote(ctx, atoll.Value(n), atoll.GeneratorBackpressure(2))
		defer gen.Release() // a worker's GC may be minutes away
		for ref, err := range gen.All(ctx) {
			if err != nil {
				return 0, err
			}
			it, err := atoll.Get(ctx, ref)
			ref.Release()
			if err != nil {
				return 0, err
			}
			sum += it.I
		}
		return sum, nil
	})

	gateType = atoll.NewActorType("gen.gate", func(context.Context) (*gate, error) {
		return &gate{}, nil
	})
	gateIsOpen = atoll.NewMethod0(gateType, "IsOpen", func(g *gate, _ context.Context) (bool, error) {
		g.asks++
		return g.open, nil
	})
	gateAsks = atoll.NewMethod0(gateType, "Asks", func(g *gate, _ context.Context) (int, error) { return g.asks, nil })
	gateOpen = atoll.NewMethod0(gateType, "Open", func(g *gate, _ context.Context) (bool, error) {
		g.open = true
		return true, nil
	})
)

// waitGateActor waits for the gate actor named gateName to open, asking it
// every so often.
func waitGateActor(ctx context.Context, gateName string, every time.Duration) error {
	g, err := atoll.GetActor[*gate](ctx, gateName)
	if err != nil {
		return err
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if open, err := atoll.Get(ctx, gateIsOpen.Remote(ctx, g)); err != nil || open {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readItem is Next then Get, checking the item's index and content.
func readItem(t *testing.T, ctx context.Context, g *atoll.ObjectRefGenerator[genItem], want int) {
	t.Helper()
	ref, err := g.Next(ctx)
	if err != nil {
		t.Fatalf("Next (want item %d): %v", want, err)
	}
	it, err := atoll.Get(ctx, ref)
	if err != nil {
		t.Fatalf("Get item %d: %v", want, err)
	}
	if it.I != want || len(it.Pad) != len(makeItem(want).Pad) || len(it.Pad) > 0 && it.Pad[len(it.Pad)-1] != byte(want) {
		t.Fatalf("item %d: got index %d with %d bytes of padding", want, it.I, len(it.Pad))
	}
}

func wantEnd(t *testing.T, ctx context.Context, g *atoll.ObjectRefGenerator[genItem]) {
	t.Helper()
	ref, err := g.Next(ctx)
	if !errors.Is(err, atoll.ErrEndOfStream) || !errors.Is(err, io.EOF) {
		t.Fatalf("after the last item: %v, %v; want ErrEndOfStream", ref, err)
	}
}

// wantClean waits for the driver to hold nothing of the streams once
// they are unreachable: no owned objects, pending tasks, streams, or
// objects in the store.
func wantClean(t *testing.T, ctx context.Context) {
	t.Helper()
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last seen: %s", last)
		}
	}()
	testutil.Eventually(t, "the owner table and the store to empty", func() bool {
		runtime.GC() // handle and stream cleanups post their drops
		m, err := atolltest.Memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.OwnedObjects == 0 && m.PendingTasks == 0 && m.StoreObjects == 0 && generatorStreams() == 0 {
			return true
		}
		last = fmt.Sprintf("%d owned objects, %d pending tasks, %d objects in the store, %d streams",
			m.OwnedObjects, m.PendingTasks, m.StoreObjects, generatorStreams())
		return false
	})
}

// testItemsBeforeTheEnd: item 0 is read while the task still runs,
// blocked on a gate the test opens afterwards.
func testItemsBeforeTheEnd(t *testing.T, ctx context.Context) {
	g, err := gateType.New(ctx, atoll.ActorName("gate"))
	if err != nil {
		t.Fatal(err)
	}
	gen := genGated.Remote(ctx, atoll.Value("gate"))
	// Item 0 comes while the task runs: a stream that delivered items
	// only at its end would never deliver it (the task waits for the
	// gate the test opens after reading it).
	first, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ref, err := gen.Next(first)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, ref); err != nil || v != 0 {
		t.Fatalf("item 0: %v %v", v, err)
	}
	// The task cannot have ended: it waits for the gate, still closed.
	if reported, taken := generatorCounts(gen); reported != 1 || taken != 1 {
		t.Fatalf("while the task waits: %d items reported, %d taken; want 1 and 1", reported, taken)
	}
	if _, err := atoll.Get(ctx, gateOpen.Remote(ctx, g)); err != nil {
		t.Fatal(err)
	}
	ref, err = gen.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, ref); err != nil || v != 1 {
		t.Fatalf("item 1: %v %v", v, err)
	}
	if _, err := gen.Next(ctx); !errors.Is(err, atoll.ErrEndOfStream) {
		t.Fatalf("end: %v", err)
	}
	if err := atoll.Kill(ctx, g); err != nil {
		t.Fatal(err)
	}
}

// testStream reads a stream of large and small items with All.
func testStream(t *testing.T, ctx context.Context) {
	n := 0
	for ref, err := range genCount.Remote(ctx, atoll.Value(30)).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		it, err := atoll.Get(ctx, ref)
		if err != nil || it.I != n || len(it.Pad) != len(makeItem(n).Pad) {
			t.Fatalf("item %d: %+v (%d padding bytes) %v", n, it.I, len(it.Pad), err)
		}
		n++
	}
	if n != 30 {
		t.Fatalf("All gave %d items, want 30", n)
	}
}

func TestGeneratorProcessWorkers(t *testing.T) {
	ctx := startProcesses(t)
	t.Run("ItemsBeforeTheEnd", func(t *testing.T) { testItemsBeforeTheEnd(t, ctx) })
	t.Run("Stream", func(t *testing.T) { testStream(t, ctx) })
	wantClean(t, ctx)
}

func TestGeneratorGoroutineWorkers(t *testing.T) {
	ctx := start(t)
	t.Run("ItemsBeforeTheEnd", func(t *testing.T) { testItemsBeforeTheEnd(t, ctx) })
	t.Run("Stream", func(t *testing.T) { testStream(t, ctx) })
	t.Run("Backpressure", func(t *testing.T) { testBackpressure(t, ctx) })
	t.Run("ErrorAfterItems", func(t *testing.T) { testErrorAfterItems(t, ctx) })
	t.Run("ReleaseMidStream", func(t *testing.T) { testReleaseMidStream(t, ctx) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, ctx) })
	wantClean(t, ctx)
}

// readHeldBack reads the n items of gen with read, each only once the
// producer is held back: limit items ahead of the caller (or at the
// end), never more.
func readHeldBack[R any](t *testing.T, gen *atoll.ObjectRefGenerator[R], n, limit int, read func(i int)) {
	t.Helper()
	for consumed := 0; consumed < n; consumed++ {
		want := min(consumed+limit, n)
		testutil.Eventually(t, fmt.Sprintf("%d items reported", want), func() bool {
			reported, _ := generatorCounts(gen)
			return reported >= want
		})
		if reported, taken := generatorCounts(gen); reported != want || taken != consumed {
			t.Fatalf("after %d taken: %d reported (%d taken), want %d: the producer ran past its backpressure limit of %d",
				consumed, reported, taken, want, limit)
		}
		read(consumed)
	}
}

// testBackpressure: the producer is never more than the limit ahead of
// the caller's Next, and gets exactly that far.
func testBackpressure(t *testing.T, ctx context.Context) {
	const n, limit = 20, 3
	gen := genCount.Remote(ctx, atoll.Value(n), atoll.GeneratorBackpressure(limit))
	readHeldBack(t, gen, n, limit, func(i int) { readItem(t, ctx, gen, i) })
	wantEnd(t, ctx, gen)
}

func TestGeneratorBackpressure(t *testing.T) {
	ctx := startProcesses(t)
	testBackpressure(t, ctx)
	wantClean(t, ctx)
}

// TestGeneratorInsideTask: a task in a worker process reads a stream
// whose backpressure limit (2) is far below its length (10): the acks
// of its owner, a worker process, reach the producer.
func TestGeneratorInsideTask(t *testing.T) {
	ctx := startProcesses(t)
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if sum, err := atoll.Get(bounded, genConsumer.Remote(ctx, atoll.Value(10))); err != nil || sum != 45 {
		t.Fatalf("stream read inside a task: %v %v; want 45", sum, err)
	}
	wantClean(t, ctx)
}

// testErrorAfterItems: a task error after k items ends the stream
// with that error after the k items.
func testErrorAfterItems(t *testing.T, ctx context.Context) {
	gen := genFailAfter.Remote(ctx, atoll.Value(4))
	for i := range 4 {
		readItem(t, ctx, gen, i)
	}
	_, err := gen.Next(ctx)
	var te *atoll.TaskError
	if !errors.As(err, &te) || te.Message != "failed after 4 items" {
		t.Fatalf("after 4 items: %v; want the task's error", err)
	}
	// The end is final.
	if _, err := gen.Next(ctx); !errors.As(err, &te) {
		t.Fatalf("Next again: %v", err)
	}
	gen.Release()
}

// testReleaseMidStream: a stream released while its task runs frees its
// items and no longer holds the task back, which runs to its end.
func testReleaseMidStream(t *testing.T, ctx context.Context) {
	gen := genCount.Remote(ctx, atoll.Value(30), atoll.GeneratorBackpressure(2))
	readItem(t, ctx, gen, 0)
	// The producer is held back with items 1 and 2 unconsumed; only the
	// release can let it go on.
	testutil.Eventually(t, "3 items reported", func() bool {
		reported, _ := generatorCounts(gen)
		return reported >= 3
	})
	if reported, _ := generatorCounts(gen); reported != 3 {
		t.Fatalf("%d items reported with 1 taken and a limit of 2; want 3", reported)
	}
	gen.Release()
	if _, err := gen.Next(ctx); err == nil {
		t.Fatal("Next after Release: no error")
	}
	testutil.Eventually(t, "the released generator's task to end", func() bool {
		m, err := atolltest.Memory(ctx)
		return err == nil && m.PendingTasks == 0
	})
}

func TestGeneratorErrorAfterItems(t *testing.T) {
	ctx := startProcesses(t)
	testErrorAfterItems(t, ctx)
	wantClean(t, ctx)
}

func TestGeneratorReleaseMidStream(t *testing.T) {
	ctx := startProcesses(t)
	testReleaseMidStream(t, ctx)
	wantClean(t, ctx)
}

// TestGeneratorWorkerKilled: the worker dies mid-stream; the retry's
// items already delivered are not delivered again, and every item comes
// once, in order. Without retries the stream ends with the crash.
func TestGeneratorWorkerKilled(t *testing.T) {
	ctx := startProcesses(t)
	tr, err := trackerType.New(ctx, atoll.ActorName("gen-tracker"))
	if err != nil {
		t.Fatal(err)
	}
	// A limit of 4 holds the retry back until the owner's answers to its
	// repeated items tell it how many were consumed.
	gen := genKillable.Remote(ctx, atoll.Value(killGenArgs{Tracker: "gen-tracker", N: 12, KillAt: 5}), atoll.MaxRetries(1),
		atoll.GeneratorBackpressure(4))
	for i := range 3 { // some taken before the kill, some not
		readItem(t, ctx, gen, i)
	}
	victim := waitForPid(t, ctx, tr)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 12; i++ {
		readItem(t, ctx, gen, i)
	}
	wantEnd(t, ctx, gen)
	if reported, taken := generatorCounts(gen); reported != 12 || taken != 12 {
		t.Fatalf("%d items reported, %d taken; want 12 of each", reported, taken)
	}

	// Without retries the kill ends the stream after the items before it.
	tr2, err := trackerType.New(ctx, atoll.ActorName("gen-tracker-2"))
	if err != nil {
		t.Fatal(err)
	}
	gen2 := genKillable.Remote(ctx, atoll.Value(killGenArgs{Tracker: "gen-tracker-2", N: 12, KillAt: 5}), atoll.MaxRetries(0))
	victim = waitForPid(t, ctx, tr2)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		readItem(t, ctx, gen2, i)
	}
	_, err = gen2.Next(ctx)
	var crashed *atoll.WorkerCrashedError
	if !errors.As(err, &crashed) {
		t.Fatalf("after a kill without retries: %v; want WorkerCrashedError", err)
	}
	for _, h := range []atoll.ActorHandle[*tracker]{tr, tr2} {
		if err := atoll.Kill(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	gen.Release()
	gen2.Release()
	wantClean(t, ctx)
}

// testCancel: cancelling the task ends the stream with CancelledError
// after the items it yielded.
func testCancel(t *testing.T, ctx context.Context) {
	gen := genUntilCancelled.Remote(ctx)
	ref, err := gen.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, ref); err != nil || v != 7 {
		t.Fatalf("item 0: %v %v", v, err)
	}
	gen.Cancel()
	end, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = gen.Next(end)
	var ce *atoll.CancelledError
	if !errors.As(err, &ce) {
		t.Fatalf("after Cancel: %v; want CancelledError", err)
	}
}

func TestGeneratorCancel(t *testing.T) {
	ctx := startProcesses(t)
	testCancel(t, ctx)
	wantClean(t, ctx)
}
