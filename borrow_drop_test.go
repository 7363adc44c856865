package atoll_test

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Standalone borrow reports: a borrower that drops a ref outside its
// lender's calls tells the lender, which frees the object without
// calling the borrower again.

var (
	// forgetKept clears the actor's field without releasing the ref:
	// the garbage collector finds the handle unreachable.
	forgetKept = atoll.NewMethod0(keeperType, "Forget", func(k *keeper, _ context.Context) (bool, error) {
		k.ref = atoll.ObjectRef[[]byte]{}
		return true, nil
	})
	// dropAfterCall hands the ref to a goroutine that releases it once
	// the call ended (its context is cancelled then): a drop outside
	// any call, which the collector's cleanups make too.
	dropAfterCall = atoll.NewMethod0(keeperType, "DropAfterCall", func(k *keeper, ctx context.Context) (bool, error) {
		ref := k.ref
		k.ref = atoll.ObjectRef[[]byte]{}
		go func() {
			<-ctx.Done()
			ref.Release()
		}()
		return true, nil
	})
	// clearKeeper runs in a worker process (an owner of its own) and
	// makes the keeper drop its ref: Release (dropKept) or forget it.
	clearKeeper = atoll.NewFunc2("borrow.clearKeeper", func(ctx context.Context, k atoll.ActorHandle[*keeper], release bool) (bool, error) {
		if release {
			return atoll.Get(ctx, dropKept.Remote(ctx, k))
		}
		return atoll.Get(ctx, forgetKept.Remote(ctx, k))
	})
)

// lendFromTask runs in a worker process, which owns the object it puts:
// it lends it to the keeper, drops its own ref and returns its pid.
var lendFromTask = atoll.NewFunc2("borrow.lendFromTask", func(ctx context.Context, k atoll.ActorHandle[*keeper], seed byte) (int, error) {
	ref, err := atoll.Put(ctx, blob(seed))
	if err != nil {
		return 0, err
	}
	if _, err := atoll.Get(ctx, keep.Remote(ctx, k, atoll.Value(refBox{Ref: ref}))); err != nil {
		return 0, err
	}
	ref.Release()
	return os.Getpid(), nil
})

// lendToKeeper has k keep a new object of the driver's, drops the
// driver's own ref and checks the driver tracks k as its one borrower.
func lendToKeeper(t *testing.T, ctx context.Context, k atoll.ActorHandle[*keeper], seed byte) {
	t.Helper()
	ref, err := atoll.Put(ctx, blob(seed))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, keep.Remote(ctx, k, atoll.Value(refBox{Ref: ref}))); err != nil {
		t.Fatal(err)
	}
	ref.Release()
	runtime.GC()
	if s, err := atoll.Get(ctx, readKept.Remote(ctx, k)); err != nil || s != blobSum(blob(seed)) {
		t.Fatalf("read by the keeper after the driver dropped its ref: %d %v", s, err)
	}
	if m, err := atolltest.Memory(ctx); err != nil || m.Borrowers != 1 || m.BorrowedObjects != 1 {
		t.Fatalf("driver tracks %d borrowers holding %d objects (%v), want 1 and 1", m.Borrowers, m.BorrowedObjects, err)
	}
}

// freedWithoutCallingKeeper waits until the driver freed everything it
// lent and owns, and the store (this node's) is empty, while the keeper
// lives on and the driver does not call it.
func freedWithoutCallingKeeper(t *testing.T, ctx context.Context) {
	t.Helper()
	var m atolltest.MemoryStats
	defer func() {
		if t.Failed() {
			t.Logf("memory: %+v", m)
		}
	}()
	testutil.Eventually(t, "the keeper's drop to reach the driver: its owner table and the store empty", func() bool {
		runtime.GC()
		var err error
		if m, err = atolltest.Memory(ctx); err != nil {
			t.Fatal(err)
		}
		return m.Borrowers == 0 && m.BorrowedObjects == 0 && m.OwnedObjects == 0 && m.PendingTasks == 0 && m.StoreObjects == 0
	})
}

// TestBorrowDropReportedToOwner: an actor keeps a ref the driver lent it
// and the driver drops its own; then a task (another owner, in a worker
// process, holding the actor's handle) has the actor drop the ref —
// released, or only forgotten so that the collector finds it. The actor
// reports the drop to the driver on its own: the object is freed and
// the driver's table and the store empty without the driver calling the
// actor again.
func TestBorrowDropReportedToOwner(t *testing.T) {
	ctx := startProcesses(t)
	for _, release := range []bool{true, false} {
		k, err := keeperType.New(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lendToKeeper(t, ctx, k, 21)
		if ok, err := atoll.Get(ctx, clearKeeper.Remote(ctx, atoll.Value(k), atoll.Value(release))); err != nil || !ok {
			t.Fatalf("release=%v: the task's call to the keeper: %v %v", release, ok, err)
		}
		freedWithoutCallingKeeper(t, ctx)
		if err := atoll.Kill(ctx, k); err != nil {
			t.Fatal(err)
		}
		k = atoll.ActorHandle[*keeper]{}
		settled(t, ctx)
	}
}

// TestBorrowDropReportedAcrossNodes: the same on a 3-node cluster, the
// keeper on node 2 and the task that has it drop the ref on node 1,
// the driver on a node of its own: the actor's report crosses to the
// driver's node through the cluster.
func TestBorrowDropReportedAcrossNodes(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 4 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}
	for _, release := range []bool{true, false} {
		k, err := keeperType.New(ctx, atoll.OnNode(nodes[2], false))
		if err != nil {
			t.Fatal(err)
		}
		lendToKeeper(t, ctx, k, 23)
		if ok, err := atoll.Get(ctx, clearKeeper.Remote(ctx, atoll.Value(k), atoll.Value(release), atoll.OnNode(nodes[1], false))); err != nil || !ok {
			t.Fatalf("release=%v: the call from node 1 to the keeper on node 2: %v %v", release, ok, err)
		}
		freedWithoutCallingKeeper(t, ctx)
		for _, id := range nodes {
			testutil.EventuallyWithin(t, 30*time.Second, "node "+id[:8]+"'s store to empty", func() bool {
				n, ok := nodeStatus(ctx, c, id)
				return ok && n.Objects == 0
			})
		}
		if err := atoll.Kill(ctx, k); err != nil {
			t.Fatal(err)
		}
		k = atoll.ActorHandle[*keeper]{}
	}
}

// manyKeeper keeps a slice of refs.
type manyKeeper struct{ refs []atoll.ObjectRef[int] }

var (
	manyKeeperType = atoll.NewActorType("borrow.manyKeeper", func(context.Context) (*manyKeeper, error) { return &manyKeeper{}, nil })
	keepMany       = atoll.NewMethod1(manyKeeperType, "Keep", func(k *manyKeeper, _ context.Context, refs []atoll.ObjectRef[int]) (int, error) {
		k.refs = refs
		return len(refs), nil
	})
	forgetMany = atoll.NewMethod0(manyKeeperType, "Forget", func(k *manyKeeper, _ context.Context) (int, error) {
		n := len(k.refs)
		k.refs = nil
		return n, nil
	})
	clearMany = atoll.NewFunc1("borrow.clearMany", func(ctx context.Context, k atoll.ActorHandle[*manyKeeper]) (int, error) {
		return atoll.Get(ctx, forgetMany.Remote(ctx, k))
	})
)

// TestBorrowDropOfManyRefsIsOneReport: an actor keeps 10,000 refs the
// driver lent it; a call from a task drops them all: the driver receives
// one standalone report, which frees them all.
func TestBorrowDropOfManyRefsIsOneReport(t *testing.T) {
	ctx := startProcesses(t)
	const n = 10000
	refs := make([]atoll.ObjectRef[int], n)
	for i := range refs {
		var err error
		if refs[i], err = atoll.Put(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	k, err := manyKeeperType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := atoll.Get(ctx, keepMany.Remote(ctx, k, atoll.Value(refs))); err != nil || got != n {
		t.Fatalf("keep %d refs: %d %v", n, got, err)
	}
	refs = nil
	testutil.Eventually(t, "the driver to track the actor holding every ref", func() bool {
		runtime.GC()
		m, err := atolltest.Memory(ctx)
		return err == nil && m.Borrowers == 1 && m.BorrowedObjects == n && m.OwnedObjects == n
	})
	before := borrowReportsReceived()
	if got, err := atoll.Get(ctx, clearMany.Remote(ctx, atoll.Value(k))); err != nil || got != n {
		t.Fatalf("the task's call dropping %d refs: %d %v", n, got, err)
	}
	freedWithoutCallingKeeper(t, ctx)
	if got := borrowReportsReceived() - before; got != 1 {
		t.Fatalf("the driver received %d standalone reports for one call dropping %d refs, want 1", got, n)
	}
	if err := atoll.Kill(ctx, k); err != nil {
		t.Fatal(err)
	}
	k = atoll.ActorHandle[*manyKeeper]{}
	settled(t, ctx)
}

// TestBorrowDropReportedToWorkerOwner: the owner is a worker process (a
// task that put the object and lent it to the keeper, then ended); the
// driver has the keeper drop the ref. The keeper's report reaches the
// owning worker process through the raylet, which frees the object while
// that process lives on (idle workers are not reaped here, so nothing
// but the report can free it).
func TestBorrowDropReportedToWorkerOwner(t *testing.T) {
	ctx := startProcesses(t, atoll.WithIdleWorkerTimeout(10*time.Minute))
	k, err := keeperType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := atoll.Get(ctx, lendFromTask.Remote(ctx, atoll.Value(k), atoll.Value(byte(29))))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if s, err := atoll.Get(ctx, readKept.Remote(ctx, k)); err != nil || s != blobSum(blob(29)) {
		t.Fatalf("read by the keeper after its owner's task ended: %d %v", s, err)
	}
	if m, err := atolltest.Memory(ctx); err != nil || m.StoreObjects != 1 || m.Borrowers != 0 {
		t.Fatalf("store holds %d objects, driver tracks %d borrowers (%v); want the worker's object only", m.StoreObjects, m.Borrowers, err)
	}
	if ok, err := atoll.Get(ctx, dropKept.Remote(ctx, k)); err != nil || !ok {
		t.Fatalf("the driver's call dropping the keeper's ref: %v %v", ok, err)
	}
	testutil.Eventually(t, "the owning worker process to free its object", func() bool {
		m, err := atolltest.Memory(ctx)
		return err == nil && m.StoreObjects == 0
	})
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the owning worker process (pid %d) is gone (%v): its death, not the report, may have freed the object", pid, err)
	}
	if err := atoll.Kill(ctx, k); err != nil {
		t.Fatal(err)
	}
	k = atoll.ActorHandle[*keeper]{}
	settled(t, ctx)
}

// TestBorrowDropOutsideCalls: the actor's goroutine releases the ref the
// driver lent it after the call that started it ended (the call's
// result still reports it held). The drop, made outside any call, is
// reported at once: the driver frees the object without calling the
// actor again.
func TestBorrowDropOutsideCalls(t *testing.T) {
	ctx := startProcesses(t)
	k, err := keeperType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lendToKeeper(t, ctx, k, 31)
	if ok, err := atoll.Get(ctx, dropAfterCall.Remote(ctx, k)); err != nil || !ok {
		t.Fatalf("the call starting the dropping goroutine: %v %v", ok, err)
	}
	freedWithoutCallingKeeper(t, ctx)
	if err := atoll.Kill(ctx, k); err != nil {
		t.Fatal(err)
	}
	k = atoll.ActorHandle[*keeper]{}
	settled(t, ctx)
}
