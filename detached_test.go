package atoll_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// TestGetIfExists: callers racing to create one named actor with
// GetIfExists all get the same actor, created once; without it the
// second creation fails; it needs a name, and an actor of another type
// is refused.
func TestGetIfExists(t *testing.T) {
	ctx := testmain.Start(t)
	const rounds, callers = 3, 6
	for r := range rounds {
		name := fmt.Sprintf("gie.shared-%d", r)
		handles := make([]atoll.ActorHandle[*dtKeeper], callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				handles[i], errs[i] = dtKeeperType.New(ctx, atoll.ActorName(name), atoll.GetIfExists())
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, caller %d: %v", r, i, err)
			}
			if handles[i].ID() != handles[0].ID() {
				t.Fatalf("round %d: caller %d got actor %s, caller 0 %s: created twice", r, i, handles[i].ID(), handles[0].ID())
			}
		}
		// One instance: every handle adds to the same count.
		var n int
		for i, h := range handles {
			v, err := atoll.Get(ctx, dtKeeperAdd.Remote(ctx, h, atoll.Value(1)))
			if err != nil || v != i+1 {
				t.Fatalf("round %d: Add through handle %d = %d, %v; want %d", r, i, v, err, i+1)
			}
			n = v
		}
		if n != callers {
			t.Fatalf("round %d: count %d, want %d", r, n, callers)
		}
	}
	if _, err := dtKeeperType.New(ctx, atoll.ActorName("gie.shared-0")); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("New of a taken name without GetIfExists: %v, want ErrInvalidArgument", err)
	}
	if _, err := dtKeeperType.New(ctx, atoll.GetIfExists()); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("GetIfExists without a name: %v, want ErrInvalidArgument", err)
	}
	if _, err := tallyType.New(ctx, atoll.ActorName("gie.shared-0"), atoll.GetIfExists()); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("GetIfExists on an actor of another type: %v, want ErrInvalidArgument", err)
	}
}
