package atoll_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Borrowing (refs inside values crossing processes): tasks and actors
// registered for the worker processes of these tests.

// refBox carries a ref inside a value.
type refBox struct {
	Ref  atoll.ObjectRef[[]byte]
	Note string
}

// holder is put as an object of its own, holding a ref.
type holder struct{ Inner atoll.ObjectRef[[]byte] }

// keeper is an actor that stores a ref it was given (a borrower that
// outlives the call that lent it).
type keeper struct{ ref atoll.ObjectRef[[]byte] }

const borrowBlob = 512 << 10 // stored in shared memory, not inline

func blob(seed byte) []byte {
	b := make([]byte, borrowBlob)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return b
}

func blobSum(b []byte) int {
	s := 0
	for _, x := range b {
		s += int(x)
	}
	return s
}

var (
	// makeBox puts an object in the worker and returns a ref to it
	// inside a struct: the object is handed over to the caller.
	makeBox = atoll.NewFunc1("borrow.makeBox", func(ctx context.Context, seed byte) (refBox, error) {
		ref, err := atoll.Put(ctx, blob(seed))
		if err != nil {
			return refBox{}, err
		}
		return refBox{Ref: ref, Note: "made"}, nil
	})
	// echoBox returns the ref it was lent, inside a new value.
	echoBox = atoll.NewFunc1("borrow.echoBox", func(_ context.Context, b refBox) (refBox, error) {
		return refBox{Ref: b.Ref, Note: "echoed"}, nil
	})
	// returnPending returns, inside a value, the ref of a task it
	// submitted without waiting for it.
	returnPending = atoll.NewFunc1("borrow.returnPending", func(ctx context.Context, seed byte) (refBox, error) {
		return refBox{Ref: slowBlob.Remote(ctx, atoll.Value(seed))}, nil
	})
	slowBlob = atoll.NewFunc1("borrow.slowBlob", func(ctx context.Context, seed byte) ([]byte, error) {
		<-ctx.Done() // cancelled with its owner's task, or at shutdown
		return nil, ctx.Err()
	})
	sumRefs = atoll.NewFunc1("borrow.sumRefs", func(ctx context.Context, refs []atoll.ObjectRef[int]) (int, error) {
		vals, err := atoll.GetAll(ctx, refs)
		if err != nil {
			return 0, err
		}
		s := 0
		for _, v := range vals {
			s += v
		}
		return s, nil
	})
	readHolder = atoll.NewFunc1("borrow.readHolder", func(ctx context.Context, h holder) (int, error) {
		v, err := atoll.Get(ctx, h.Inner)
		if err != nil {
			return 0, err
		}
		return blobSum(v), nil
	})
	keeperType = atoll.NewActorType("borrow.keeper", func(context.Context) (*keeper, error) { return &keeper{}, nil })
	keep       = atoll.NewMethod1(keeperType, "Keep", func(k *keeper, _ context.Context, b refBox) (int, error) {
		k.ref = b.Ref
		return os.Getpid(), nil
	})
	readKept = atoll.NewMethod0(keeperType, "Read", func(k *keeper, ctx context.Context) (int, error) {
		v, err := atoll.Get(ctx, k.ref)
		if err != nil {
			return 0, err
		}
		return blobSum(v), nil
	})
	dropKept = atoll.NewMethod0(keeperType, "Drop", func(k *keeper, _ context.Context) (bool, error) {
		k.ref.Release()
		k.ref = atoll.ObjectRef[[]byte]{}
		return true, nil
	})
)

// genBoxes yields n boxes: even ones hold an object the generator puts
// (handed over to the caller with the item), odd ones the ref it was lent.
var genBoxes = atoll.NewGenFunc2("borrow.genBoxes", func(ctx context.Context, lent refBox, n int, yield func(refBox) error) error {
	for i := range n {
		box := refBox{Ref: lent.Ref, Note: "lent"}
		if i%2 == 0 {
			ref, err := atoll.Put(ctx, blob(byte(i)))
			if err != nil {
				return err
			}
			box = refBox{Ref: ref, Note: "made"}
		}
		if err := yield(box); err != nil {
			return err
		}
	}
	return nil
})

// forwardBox reads the box's object after forwarding it through hops
// nested tasks (each a borrower of the one before). It calls itself, so
// it is registered in init.
var forwardBox *atoll.Func2[refBox, int, int]

func init() {
	forwardBox = atoll.NewFunc2("borrow.forwardBox", func(ctx context.Context, b refBox, hops int) (int, error) {
		if hops > 0 {
			return atoll.Get(ctx, forwardBox.Remote(ctx, atoll.Value(b), atoll.Value(hops-1)))
		}
		v, err := atoll.Get(ctx, b.Ref)
		if err != nil {
			return 0, err
		}
		return blobSum(v), nil
	})
}

// settled waits until the store and this process's owner table hold
// nothing: every object freed, every borrow ended.
func settled(t *testing.T, ctx context.Context) {
	t.Helper()
	var m atolltest.MemoryStats
	defer func() {
		if t.Failed() {
			t.Logf("memory: %+v", m)
		}
	}()
	testutil.Eventually(t, "the store and the owner table to empty", func() bool {
		runtime.GC() // handle cleanups post their drops
		var err error
		if m, err = atolltest.Memory(ctx); err != nil {
			t.Fatal(err)
		}
		return m.StoreObjects == 0 && m.OwnedObjects == 0 && m.PendingTasks == 0 && m.Borrowers == 0 && m.BorrowedObjects == 0
	})
}

// TestBorrowRefReturnedInsideStruct: a worker process puts an object and
// returns a ref to it inside a struct; the driver reads it, lends it to
// another task that returns it inside a new value, and forwards it
// through two nested tasks. Then everything is freed.
func TestBorrowRefReturnedInsideStruct(t *testing.T) {
	ctx := startProcesses(t)
	box, err := atoll.Get(ctx, makeBox.Remote(ctx, atoll.Value(byte(7))))
	if err != nil {
		t.Fatal(err)
	}
	want := blobSum(blob(7))
	if v, err := atoll.Get(ctx, box.Ref); err != nil || blobSum(v) != want || box.Note != "made" {
		t.Fatalf("ref returned inside a struct: sum %d note %q err %v", blobSum(v), box.Note, err)
	}
	echoed, err := atoll.Get(ctx, echoBox.Remote(ctx, atoll.Value(box)))
	if err != nil || echoed.Ref.ID() != box.Ref.ID() || echoed.Note != "echoed" {
		t.Fatalf("lent ref returned: %v %v", echoed, err)
	}
	if s, err := atoll.Get(ctx, forwardBox.Remote(ctx, atoll.Value(box), atoll.Value(2))); err != nil || s != want {
		t.Fatalf("forwarded through two nested tasks: %d %v", s, err)
	}
	box, echoed = refBox{}, refBox{}
	settled(t, ctx)
}

// TestBorrowGeneratorItemsHoldRefs: a generator in a worker process
// yields items holding refs to objects it put (handed over with each
// item) and to the object it was lent; the caller reads them all, keeps
// one past the stream's end, and then everything is freed.
func TestBorrowGeneratorItemsHoldRefs(t *testing.T) {
	ctx := startProcesses(t)
	testGeneratorItemsHoldRefs(t, ctx)
	settled(t, ctx)
}

func testGeneratorItemsHoldRefs(t *testing.T, ctx context.Context, opts ...atoll.TaskOption) {
	lentRef, err := atoll.Put(ctx, blob(100))
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	gen := genBoxes.Remote(ctx, atoll.Value(refBox{Ref: lentRef}), atoll.Value(n), opts...)
	var kept refBox
	i := 0
	for ref, err := range gen.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		box, err := atoll.Get(ctx, ref)
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		want, note := blobSum(blob(byte(i))), "made"
		if i%2 == 1 {
			want, note = blobSum(blob(100)), "lent"
		}
		v, err := atoll.Get(ctx, box.Ref)
		if err != nil || blobSum(v) != want || box.Note != note {
			t.Fatalf("item %d: the ref inside reads sum %d (want %d), note %q (want %q), err %v", i, blobSum(v), want, box.Note, note, err)
		}
		if i == 0 {
			kept = box // a handed-over object, kept past the stream's end
		}
		i++
	}
	if i != n {
		t.Fatalf("%d items, want %d", i, n)
	}
	gen.Release()
	lentRef = atoll.ObjectRef[[]byte]{}
	// The generator's worker may be gone; the kept object is the caller's.
	runtime.GC()
	if v, err := atoll.Get(ctx, kept.Ref); err != nil || blobSum(v) != blobSum(blob(0)) {
		t.Fatalf("the kept item's object after the stream: sum %d, err %v", blobSum(v), err)
	}
	kept = refBox{}
}

// TestBorrowSliceOfManyRefs: a task given a slice of 10,000 refs (past
// the inline size, so the slice travels as an object) reads them all.
func TestBorrowSliceOfManyRefs(t *testing.T) {
	ctx := startProcesses(t)
	const n = 10000
	refs := make([]atoll.ObjectRef[int], n)
	want := 0
	for i := range refs {
		var err error
		if refs[i], err = atoll.Put(ctx, i); err != nil {
			t.Fatal(err)
		}
		want += i
	}
	if s, err := atoll.Get(ctx, sumRefs.Remote(ctx, atoll.Value(refs))); err != nil || s != want {
		t.Fatalf("slice of %d refs: %d %v", n, s, err)
	}
	refs = nil
	settled(t, ctx)
}

// TestBorrowStructWithRefPutAndPassedByRef: a struct holding a ref is put
// as an object and passed by ref; the driver's own handle to the inner
// object is gone, so only the outer object keeps it alive.
func TestBorrowStructWithRefPutAndPassedByRef(t *testing.T) {
	ctx := startProcesses(t)
	inner, err := atoll.Put(ctx, blob(3))
	if err != nil {
		t.Fatal(err)
	}
	outer, err := atoll.Put(ctx, holder{Inner: inner})
	if err != nil {
		t.Fatal(err)
	}
	inner.Release()
	for i := range 3 {
		runtime.GC()
		if s, err := atoll.Get(ctx, readHolder.Remote(ctx, outer)); err != nil || s != blobSum(blob(3)) {
			t.Fatalf("read %d through the outer object: %d %v", i, s, err)
		}
	}
	outer.Release()
	settled(t, ctx)
}

// TestBorrowActorKeepsRef: an actor stores a ref lent to it; the driver
// drops its own; the actor still reads the object, across collections
// and new objects that would reuse freed memory; once the actor drops
// it, it is freed.
func TestBorrowActorKeepsRef(t *testing.T) {
	ctx := startProcesses(t)
	k, err := keeperType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := atoll.Put(ctx, blob(9))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, keep.Remote(ctx, k, atoll.Value(refBox{Ref: ref}))); err != nil {
		t.Fatal(err)
	}
	ref.Release()
	want := blobSum(blob(9))
	for i := range 3 {
		runtime.GC()
		other, err := atoll.Put(ctx, blob(byte(100+i))) // may reuse a freed block
		if err != nil {
			t.Fatal(err)
		}
		if s, err := atoll.Get(ctx, readKept.Remote(ctx, k)); err != nil || s != want {
			t.Fatalf("read %d by the borrower after the owner dropped its ref: %d %v", i, s, err)
		}
		other.Release()
	}
	m, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Borrowers != 1 || m.BorrowedObjects != 1 {
		t.Fatalf("owner tracks %d borrowers holding %d objects, want 1 and 1", m.Borrowers, m.BorrowedObjects)
	}
	if _, err := atoll.Get(ctx, dropKept.Remote(ctx, k)); err != nil {
		t.Fatal(err)
	}
	if err := atoll.Kill(ctx, k); err != nil {
		t.Fatal(err)
	}
	k = atoll.ActorHandle[*keeper]{}
	settled(t, ctx)
}

// TestBorrowerProcessKilled: an actor holding a borrowed ref is killed
// with SIGKILL: its borrows end with it and the object is freed.
func TestBorrowerProcessKilled(t *testing.T) {
	ctx := startProcesses(t)
	k, err := keeperType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := atoll.Put(ctx, blob(5))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := atoll.Get(ctx, keep.Remote(ctx, k, atoll.Value(refBox{Ref: ref})))
	if err != nil {
		t.Fatal(err)
	}
	ref.Release()
	runtime.GC()
	if s, err := atoll.Get(ctx, readKept.Remote(ctx, k)); err != nil || s != blobSum(blob(5)) {
		t.Fatalf("read by the borrower: %d %v", s, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	k = atoll.ActorHandle[*keeper]{}
	settled(t, ctx)
}

// TestBorrowReturnPendingRefRefused: a task that returns, inside a value,
// the ref of a task it has not waited for fails with ErrInvalidArgument
// saying to Wait first; nothing is left behind in the driver.
func TestBorrowReturnPendingRefRefused(t *testing.T) {
	ctx := startProcesses(t)
	_, err := atoll.Get(ctx, returnPending.Remote(ctx, atoll.Value(byte(1))))
	if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "Wait for") {
		t.Fatalf("returning a pending ref: %v, want ErrInvalidArgument telling to Wait", err)
	}
	settled(t, ctx)
}
