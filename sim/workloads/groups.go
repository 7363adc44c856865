package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/sim"
)

// groupStrategies are the rounds' strategies, by turns.
var groupStrategies = []atoll.PlacementStrategy{atoll.PlacementPack, atoll.PlacementSpread, atoll.PlacementStrictSpread, atoll.PlacementStrictPack}

// groupWait bounds how long a round waits for its group to be created
// (simulated), groupPoll how often it looks: past it the round removes
// the group, and what waits in it fails.
const (
	groupWait = 30 * time.Second
	groupPoll = 200 * time.Millisecond
)

// Groups runs rounds of placement groups, half a second apart. Each round
// reserves one-CPU bundles in a named group (found by its name while it
// lives, not after) (three by PACK, SPREAD and STRICT_SPREAD, two
// by STRICT_PACK, by turns), makes a chunk with a task in each bundle and
// sums each with a task in any bundle, calls an actor placed in bundle 0
// (MaxRestarts 2) six times, then removes the group: a task placed in it
// afterwards must fail, unscheduled. Work placed in the group waits for
// its reservation; a node that dies takes its bundles with it and the GCS
// places them again; a group not created for groupWait in a row (the
// faults left no room for it) is removed, which fails what waits in it. A
// wrong value or a task run in a removed group fails the run; a typed
// error (a fault may cause one) does not, and the first is returned once
// every round ran.
func Groups(ctx context.Context, rounds int) error {
	return inRounds(ctx, rounds, groupRound)
}

func groupRound(ctx context.Context, round int, note func(error) error) error {
	strategy := groupStrategies[round%len(groupStrategies)]
	count := 3
	if strategy == atoll.PlacementStrictPack {
		count = 2 // one node holds them: the simulator's nodes have 2 CPUs
	}
	bundles := make([]atoll.Resources, count)
	for i := range bundles {
		bundles[i] = atoll.Resources{CPU: 1}
	}
	name := fmt.Sprintf("group-%d", round)
	pg, err := atoll.NewPlacementGroup(ctx, bundles, strategy, atoll.PlacementGroupName(name))
	if err != nil {
		return note(err)
	}
	// Its name finds it while it lives.
	switch byName, err := atoll.GetPlacementGroup(ctx, name); {
	case err != nil:
		if err := note(err); err != nil {
			return err
		}
	case byName.ID() != pg.ID():
		return fmt.Errorf("round %d: the group named %q is %s, want %s", round, name, byName.ID()[:8], pg.ID()[:8])
	}
	removed := false
	defer func() {
		if !removed {
			_ = removeGroup(ctx, pg)
		}
	}()
	// Work placed in the group waits for its reservation.
	const n = 64
	chunks := make([]atoll.ObjectRef[[]float64], count)
	for i := range chunks {
		chunks[i] = makeChunk.Remote(ctx, atoll.Value(round*10+i), atoll.Value(n), atoll.InPlacementGroup(pg, i), atoll.MaxRetries(3))
	}
	defer func() {
		for _, c := range chunks {
			c.Release()
		}
	}()
	sums := make([]atoll.ObjectRef[float64], count)
	for i, c := range chunks {
		sums[i] = chunkSum.Remote(ctx, c, atoll.InPlacementGroup(pg, atoll.AnyBundle), atoll.MaxRetries(3))
	}
	defer func() {
		for _, s := range sums {
			s.Release()
		}
	}()
	if !settle(ctx, pg, sums) {
		// Not reserved in time (faults): removing it fails what waits.
		if err := removeGroup(ctx, pg); err != nil {
			return note(err)
		}
		removed = true
	}
	for i, s := range sums {
		got, err := atoll.Get(ctx, s)
		if err != nil {
			if err := note(err); err != nil {
				return err
			}
			continue
		}
		if want := expectedSum(round*10+i, n); got != want {
			return fmt.Errorf("round %d: bundle %d: sum %v, want %v", round, i, got, want)
		}
	}
	if !removed {
		if err := groupActor(ctx, round, pg, note); err != nil {
			return err
		}
		if err := removeGroup(ctx, pg); err != nil {
			return note(err)
		}
		removed = true
	}
	// Removed: its name finds nothing.
	switch byName, err := atoll.GetPlacementGroup(ctx, name); {
	case err == nil:
		return fmt.Errorf("round %d: the removed group's name %q still finds %s", round, name, byName.ID()[:8])
	case !errors.Is(err, atoll.ErrNotFound):
		if err := note(err); err != nil {
			return err
		}
	}
	// Nothing runs in a removed group.
	late := makeChunk.Remote(ctx, atoll.Value(round), atoll.Value(1), atoll.InPlacementGroup(pg, 0))
	defer late.Release()
	switch _, err := atoll.Get(ctx, late); {
	case err == nil:
		return fmt.Errorf("round %d: a task placed in the removed group %s ran", round, pg.ID()[:8])
	case !errors.Is(err, atoll.ErrUnschedulable):
		return note(err)
	}
	return nil
}

// settle waits until every ref is ready, polling (simulated time), and
// reports whether they are; it gives up (false) once the group has not
// been created for groupWait in a row: a group whose bundles' nodes died
// waits for room that may never come (on a cluster the faults left too
// small for it), and so does the work placed in it, as in Ray. The
// caller then removes the group, which fails what waits in it.
func settle[R atoll.Ref](ctx context.Context, pg *atoll.PlacementGroup, refs []R) bool {
	// A context past its deadline makes Wait look without waiting.
	now, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel()
	var stuck time.Duration
	for {
		if ready, _, err := atoll.Wait(now, refs, atoll.NumReady(len(refs))); err == nil && len(ready) == len(refs) {
			return true
		}
		if st, err := pg.State(ctx); err == nil && st.State == "CREATED" {
			stuck = 0
		} else {
			stuck += groupPoll
		}
		if stuck >= groupWait {
			return false
		}
		if err := sim.Sleep(ctx, groupPoll); err != nil {
			return false
		}
	}
}

// removeGroup removes the group, asking again while the GCS cannot be
// reached (a partition, a dropped request): a group left behind would
// hold its bundles for good.
func removeGroup(ctx context.Context, pg *atoll.PlacementGroup) error {
	var err error
	for range 20 {
		if err = pg.Remove(ctx); err == nil || !errors.Is(err, atoll.ErrUnavailable) {
			return err
		}
		if err := sim.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	return err
}

// groupActor calls an actor placed in bundle 0 of pg, in order.
func groupActor(ctx context.Context, round int, pg *atoll.PlacementGroup, note func(error) error) error {
	h, err := logType.New(ctx, atoll.InPlacementGroup(pg, 0), atoll.MaxRestarts(2), atoll.MaxTaskRetries(2))
	if err != nil {
		return note(err)
	}
	defer func() { _ = atoll.Kill(ctx, h) }()
	for i := range 6 {
		r := logAdd.Remote(ctx, h, atoll.Value(i))
		if !settle(ctx, pg, []atoll.ObjectRef[[]int]{r}) {
			// Its bundle's node died and the group has no room again:
			// removing the group kills the actor, and the call fails.
			if err := removeGroup(ctx, pg); err != nil {
				r.Release()
				return note(err)
			}
		}
		l, err := atoll.Get(ctx, r)
		r.Release()
		if err != nil {
			if err := note(err); err != nil {
				return err
			}
			continue
		}
		if len(l) == 0 || l[len(l)-1] != i {
			return fmt.Errorf("round %d: call %d on the group's actor saw log %v", round, i, l)
		}
	}
	return nil
}
