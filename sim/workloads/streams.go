package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/sim"
)

// chunks is a streaming generator: item i is chunk seed+i, of n values,
// yielded a while apart (simulated time), so that faults find it between
// items. Small chunks travel inline, larger ones through the store.
var chunks = atoll.NewGenFunc2("sim.workloads.chunks", func(ctx context.Context, seed, count int, yield func([]float64) error) error {
	for i := 0; i < count; i++ {
		if err := sim.Sleep(ctx, time.Duration(20+10*((seed+i)%4))*time.Millisecond); err != nil {
			return err
		}
		if err := yield(chunkOf(seed+i, streamChunkLen(seed+i))); err != nil {
			return err
		}
	}
	return nil
})

// streamChunkLen alternates small chunks (inline) and 32 KiB ones.
func streamChunkLen(i int) int {
	if i%2 == 0 {
		return 16
	}
	return 4 << 10
}

func chunkOf(seed, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64((seed*7919 + i) % 1000)
	}
	return xs
}

// Streams runs rounds of streaming generators, half a second apart: a
// generator yielding eight chunks with at most two unread (backpressure),
// read as the items come, every other item summed by a task it is passed
// to; a second generator dropped after two items; a third cancelled
// partway. Items arrive once each, in order, with the values yielded, and
// the stream ends after the last; a typed error (a fault may cause one)
// ends a stream early without failing the run, and the first is returned
// once every round ran.
func Streams(ctx context.Context, rounds int) error {
	return inRounds(ctx, rounds, func(ctx context.Context, round int, note func(error) error) error {
		if err := readStream(ctx, round, note); err != nil {
			return err
		}
		if err := dropStream(ctx, round, note); err != nil {
			return err
		}
		return cancelStream(ctx, round, note)
	})
}

// readStream reads a whole stream and checks every item.
func readStream(ctx context.Context, round int, note func(error) error) error {
	const count = 8
	seed := round * 100
	gen := chunks.Remote(ctx, atoll.Value(seed), atoll.Value(count), atoll.GeneratorBackpressure(2), atoll.MaxRetries(3))
	defer gen.Release()
	i := 0
	for ref, err := range gen.All(ctx) {
		if err != nil {
			return note(err)
		}
		if i >= count {
			ref.Release()
			return fmt.Errorf("round %d: the stream gave item %d of %d", round, i, count)
		}
		want := chunkOf(seed+i, streamChunkLen(seed+i))
		if i%2 == 1 {
			// Passed on to a task, which reads it wherever it runs.
			sr := chunkSum.Remote(ctx, ref, atoll.MaxRetries(3))
			s, err := atoll.Get(ctx, sr)
			sr.Release()
			ref.Release()
			if err != nil {
				if err := note(err); err != nil {
					return err
				}
			} else if w := sum(want); s != w {
				return fmt.Errorf("round %d: item %d sums to %v, want %v", round, i, s, w)
			}
		} else {
			xs, err := atoll.Get(ctx, ref)
			ref.Release()
			if err != nil {
				if err := note(err); err != nil {
					return err
				}
			} else if sum(xs) != sum(want) || len(xs) != len(want) {
				return fmt.Errorf("round %d: item %d holds %d values summing to %v, want %d summing to %v", round, i, len(xs), sum(xs), len(want), sum(want))
			}
		}
		i++
	}
	if i != count {
		return fmt.Errorf("round %d: the stream ended after %d items of %d, with no error", round, i, count)
	}
	return nil
}

// dropStream takes two items of a stream and releases it: the task, held
// back by backpressure, goes on and its later items are freed as they
// come (the simulator's checks at the end find nothing left).
func dropStream(ctx context.Context, round int, note func(error) error) error {
	seed := round*100 + 50
	gen := chunks.Remote(ctx, atoll.Value(seed), atoll.Value(6), atoll.GeneratorBackpressure(1), atoll.MaxRetries(3))
	defer gen.Release()
	for i := 0; i < 2; i++ {
		ref, err := gen.Next(ctx)
		if err != nil {
			return note(err)
		}
		xs, err := atoll.Get(ctx, ref)
		ref.Release()
		if err != nil {
			return note(err)
		}
		if want := chunkOf(seed+i, streamChunkLen(seed+i)); sum(xs) != sum(want) {
			return fmt.Errorf("round %d: dropped stream's item %d sums to %v, want %v", round, i, sum(xs), sum(want))
		}
	}
	return nil
}

// cancelStream cancels a stream at a point that moves with the round:
// it ends with the items yielded before and then ErrCancelled, or whole.
func cancelStream(ctx context.Context, round int, note func(error) error) error {
	const count = 5
	seed := round*100 + 70
	gen := chunks.Remote(ctx, atoll.Value(seed), atoll.Value(count), atoll.MaxRetries(3))
	defer gen.Release()
	if err := sim.Sleep(ctx, time.Duration(round%4)*40*time.Millisecond); err != nil {
		return err
	}
	gen.Cancel()
	i := 0
	for ref, err := range gen.All(ctx) {
		if errors.Is(err, atoll.ErrCancelled) {
			return nil
		}
		if err != nil {
			return note(err)
		}
		xs, err := atoll.Get(ctx, ref)
		ref.Release()
		if err != nil {
			if err := note(err); err != nil {
				return err
			}
		} else if want := chunkOf(seed+i, streamChunkLen(seed+i)); sum(xs) != sum(want) {
			return fmt.Errorf("round %d: cancelled stream's item %d sums to %v, want %v", round, i, sum(xs), sum(want))
		}
		i++
	}
	if i != count {
		return fmt.Errorf("round %d: the cancelled stream ended after %d items of %d, with no error", round, i, count)
	}
	return nil
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
