package atoll_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

var (
	pgWhere = atoll.NewFunc0("pg.where", func(ctx context.Context) (string, error) {
		return atoll.CurrentNodeID(), nil
	})
	pgCounterType = atoll.NewActorType("pg.Counter", func(context.Context) (*pgCounter, error) { return &pgCounter{}, nil })
	pgCounterAdd  = atoll.NewMethod1(pgCounterType, "Add", func(c *pgCounter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
)

type pgCounter struct{ n int }

// TestPlacementGroupsOnOneNode: groups on the embedded node reserve its
// CPUs: tasks and actors run in their bundles, a group that does not fit
// waits with a reason and is created once another is removed; a removed
// group's actors die and its tasks fail; bad input fails with typed
// errors.
func TestPlacementGroupsOnOneNode(t *testing.T) {
	ctx := start(t)
	pg, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 1}, {CPU: 1}}, atoll.PlacementPack, atoll.PlacementGroupName("pg.first"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	st, err := pg.State(ctx)
	if err != nil || st.State != "CREATED" || len(st.BundleNodes) != 2 || st.BundleNodes[0] == "" {
		t.Fatalf("State: %+v %v", st, err)
	}
	if got, err := atoll.GetPlacementGroup(ctx, "pg.first"); err != nil || got.ID() != pg.ID() || len(got.Bundles()) != 2 {
		t.Fatalf("GetPlacementGroup: %v %v", got, err)
	}
	// A task in each bundle, and in any bundle.
	for _, b := range []int{0, 1, atoll.AnyBundle} {
		if node, err := atoll.Get(ctx, pgWhere.Remote(ctx, atoll.InPlacementGroup(pg, b))); err != nil || node != st.BundleNodes[0] {
			t.Fatalf("a task in bundle %d: %q %v", b, node, err)
		}
	}
	c, err := pgCounterType.New(ctx, atoll.InPlacementGroup(pg, 1), atoll.WithTaskResources(atoll.Resources{CPU: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := atoll.Get(ctx, pgCounterAdd.Remote(ctx, c, atoll.Value(2))); err != nil || n != 2 {
		t.Fatalf("actor in bundle 1: %d %v", n, err)
	}
	// The node's two CPUs are reserved: another group waits, not ready.
	second, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 2}}, atoll.PlacementStrictPack)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := second.Wait(ctx, 200*time.Millisecond); ok || err != nil {
		t.Fatalf("Wait of a group that does not fit: %v %v", ok, err)
	}
	if st, err := second.State(ctx); err != nil || st.State != "PENDING" || st.Reason == "" {
		t.Fatalf("a waiting group's state: %+v %v", st, err)
	}
	// A task in the waiting group waits with it.
	waiting := pgWhere.Remote(ctx, atoll.InPlacementGroup(second, 0), atoll.WithTaskResources(atoll.Resources{CPU: 1}))
	// Removing the first kills its actor and lets the second in.
	if err := pg.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := atoll.RemovePlacementGroup(ctx, pg); err != nil {
		t.Fatalf("a second removal: %v", err)
	}
	// Its bundles are released (and its actor killed) right after the
	// removal is recorded.
	testutil.Eventually(t, "a call to an actor of a removed group to fail ActorDied", func() bool {
		_, err := atoll.Get(ctx, pgCounterAdd.Remote(ctx, c, atoll.Value(1)))
		return errors.Is(err, atoll.ErrActorDied)
	})
	if err := pg.Ready(ctx); !errors.Is(err, atoll.ErrPlacementGroupRemoved) || !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("Ready of a removed group: %v", err)
	}
	if _, err := atoll.Get(ctx, pgWhere.Remote(ctx, atoll.InPlacementGroup(pg, 0))); !errors.As(err, new(*atoll.UnschedulableError)) {
		t.Fatalf("a task in a removed group: %v, want UnschedulableError", err)
	}
	if err := second.Ready(ctx); err != nil {
		t.Fatalf("the second group after the first's removal: %v", err)
	}
	if _, err := atoll.Get(ctx, waiting); err != nil {
		t.Fatalf("the task that waited for the second group: %v", err)
	}
	if err := second.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := atoll.PlacementGroups(ctx)
	if err != nil || len(list) != 2 || list[0].State != "REMOVED" || list[1].State != "REMOVED" {
		t.Fatalf("PlacementGroups: %+v %v", list, err)
	}

	// Bad input.
	for name, f := range map[string]func() error{
		"no bundles": func() error {
			_, err := atoll.NewPlacementGroup(ctx, nil, atoll.PlacementPack)
			return err
		},
		"an empty bundle": func() error {
			_, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 1}, {}}, atoll.PlacementPack)
			return err
		},
		"a negative amount": func() error {
			_, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: -1}}, atoll.PlacementPack)
			return err
		},
		"an unknown strategy": func() error {
			_, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 1}}, atoll.PlacementStrategy(7))
			return err
		},
		"a bundle out of range": func() error {
			_, err := atoll.Get(ctx, pgWhere.Remote(ctx, atoll.InPlacementGroup(second, 1)))
			return err
		},
		"more than the bundle holds": func() error {
			_, err := atoll.Get(ctx, pgWhere.Remote(ctx, atoll.InPlacementGroup(second, 0), atoll.WithTaskResources(atoll.Resources{CPU: 3})))
			return err
		},
		"a nil group": func() error {
			_, err := pgCounterType.New(ctx, atoll.InPlacementGroup(nil, 0))
			return err
		},
	} {
		if err := f(); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := atoll.GetPlacementGroup(ctx, "pg.none"); !errors.Is(err, atoll.ErrNotFound) {
		t.Errorf("GetPlacementGroup of an unknown name: %v", err)
	}
}
