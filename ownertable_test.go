package atoll_test

import (
	"runtime"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestOwnerTablesStayFlat: a driver that keeps making and dropping
// objects, tasks and actors holds nothing of them once they are
// unreachable: its owner table forgets dropped refs, finished tasks and
// dead actors whose handles are gone.
func TestOwnerTablesStayFlat(t *testing.T) {
	ctx := start(t)
	const rounds = 40 // each makes an actor (half of them killed), a put and a task
	for i := 0; i < rounds; i++ {
		c, err := counterType.New(ctx, atoll.Value(i))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); err != nil || v != i+1 {
			t.Fatalf("call %d: %v, %v", i, v, err)
		}
		if i%2 == 0 {
			if err := atoll.Kill(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		ref, err := atoll.Put(ctx, make([]byte, 200<<10))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(i))); err != nil {
			t.Fatal(err)
		}
		ref.Release()
	}
	var m atolltest.MemoryStats
	testutil.Eventually(t, "the owner table to empty", func() bool {
		runtime.GC() // handle cleanups post their drops
		var err error
		m, err = atolltest.Memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The actors not killed are alive and owned by this job: they
		// stay until it ends.
		return m.OwnedObjects == 0 && m.PendingTasks == 0 && m.ActorHandles == rounds/2 && m.StoreObjects == 0
	})
}
