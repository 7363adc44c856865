package sim

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// A workload touching every part: objects large enough to spill, tasks
// reading them, a task borrowing refs inside its argument, nested tasks,
// and an actor with ordered calls.

var (
	makeChunk = atoll.NewFunc2("simw.makeChunk", func(_ context.Context, seed, n int) ([]float64, error) {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64((seed*7919 + i) % 1000)
		}
		return xs, nil
	})
	chunkSum = atoll.NewFunc1("simw.chunkSum", func(_ context.Context, xs []float64) (float64, error) {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	sumRefs = atoll.NewFunc1("simw.sumRefs", func(ctx context.Context, refs []atoll.ObjectRef[[]float64]) (float64, error) {
		s := 0.0
		for _, r := range refs {
			xs, err := atoll.Get(ctx, r)
			if err != nil {
				return 0, err
			}
			for _, x := range xs {
				s += x
			}
		}
		return s, nil
	})
	tree *atoll.Func1[int, int]
)

func init() {
	tree = atoll.NewFunc1("simw.tree", func(ctx context.Context, depth int) (int, error) {
		if depth == 0 {
			return 1, nil
		}
		a := tree.Remote(ctx, atoll.Value(depth-1))
		b := tree.Remote(ctx, atoll.Value(depth-1))
		x, err := atoll.Get(ctx, a)
		if err != nil {
			return 0, err
		}
		y, err := atoll.Get(ctx, b)
		if err != nil {
			return 0, err
		}
		return x + y + 1, nil
	})
}

type logActor struct{ log []int }

var (
	logType = atoll.NewActorType("simw.Log", func(context.Context) (*logActor, error) { return &logActor{}, nil })
	logAdd  = atoll.NewMethod1(logType, "Add", func(a *logActor, _ context.Context, i int) ([]int, error) {
		a.log = append(a.log, i)
		return append([]int(nil), a.log...), nil
	})
)

func expectedSum(seed, n int) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		s += float64((seed*7919 + i) % 1000)
	}
	return s
}

// mixed is the workload; it fails on a wrong value, and returns the
// first typed error it met (a fault may cause one) after checking the
// rest.
func mixed(ctx context.Context) error {
	const chunks, n = 8, 64 << 10 // 512 KiB each
	var firstErr error
	note := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	refs := make([]atoll.ObjectRef[[]float64], chunks)
	for i := range refs {
		refs[i] = makeChunk.Remote(ctx, atoll.Value(i), atoll.Value(n), atoll.MaxRetries(3))
	}
	sums := make([]atoll.ObjectRef[float64], chunks)
	for i := range refs {
		sums[i] = chunkSum.Remote(ctx, refs[i], atoll.MaxRetries(3))
	}
	for i, r := range sums {
		v, err := atoll.Get(ctx, r)
		if err != nil {
			note(err)
			continue
		}
		if want := expectedSum(i, n); v != want {
			return fmt.Errorf("chunkSum %d = %v, want %v", i, v, want)
		}
	}
	b, err := atoll.Get(ctx, sumRefs.Remote(ctx, atoll.Value(refs[:3]), atoll.MaxRetries(3)))
	if err != nil {
		note(err)
	} else if want := expectedSum(0, n) + expectedSum(1, n) + expectedSum(2, n); b != want {
		return fmt.Errorf("sumRefs = %v, want %v", b, want)
	}
	t, err := atoll.Get(ctx, tree.Remote(ctx, atoll.Value(3), atoll.MaxRetries(3)))
	if err != nil {
		note(err)
	} else if t != 15 {
		return fmt.Errorf("tree(3) = %d, want 15", t)
	}
	h, err := logType.New(ctx, atoll.MaxRestarts(2), atoll.MaxTaskRetries(2))
	if err != nil {
		return err
	}
	calls := make([]atoll.ObjectRef[[]int], 12)
	for i := range calls {
		calls[i] = logAdd.Remote(ctx, h, atoll.Value(i))
	}
	for i, c := range calls {
		l, err := atoll.Get(ctx, c)
		if err != nil {
			note(err)
			continue
		}
		// The actor's log (since its last restart) ends with i and is
		// in call order.
		if len(l) == 0 || l[len(l)-1] != i {
			return fmt.Errorf("call %d saw log %v", i, l)
		}
		for k := 1; k < len(l); k++ {
			if l[k] <= l[k-1] {
				return fmt.Errorf("call %d saw log out of order: %v", i, l)
			}
		}
	}
	for _, r := range refs {
		r.Release()
	}
	for _, r := range sums {
		r.Release()
	}
	for _, c := range calls {
		c.Release()
	}
	return firstErr
}

func runMixed(t *testing.T, cfg Config) *Result {
	t.Helper()
	res := Run(cfg, mixed)
	if res.Failure != nil {
		for _, l := range res.Tail {
			t.Log(l)
		}
		t.Fatalf("%v", res)
	}
	return res
}

func TestMixedNoFaults(t *testing.T) {
	res := runMixed(t, Config{Seed: 3, Nodes: 5, NoFaults: true})
	if res.WorkloadErr != nil {
		t.Fatalf("workload: %v", res.WorkloadErr)
	}
	t.Log(res, res.Stats)
}

var _ = errors.New

func TestMixedSeeds(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		res := Run(Config{Seed: seed, Nodes: 5}, mixed)
		t.Log(res)
		if res.Failure != nil {
			for _, l := range res.Tail[max(0, len(res.Tail)-60):] {
				t.Log(l)
			}
			for _, f := range res.Schedule {
				t.Log("  fault ", f)
			}
			t.Fatalf("seed %d failed", seed)
		}
	}
}

func TestDeterminismQuick(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a := Run(Config{Seed: seed, Nodes: 5}, mixed)
		b := Run(Config{Seed: seed, Nodes: 5}, mixed)
		if a.Hash != b.Hash || a.Events != b.Events {
			t.Errorf("seed %d: %v then %v", seed, a, b)
		}
	}
}
