package data

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// IterOption sets how IterBatches and Iter consume a dataset.
type IterOption func(*iterConfig)

type iterConfig struct {
	prefetch int
	err      error
}

// Prefetch makes IterBatches (and Iter) fetch up to n blocks ahead while
// the loop body runs: a goroutine pulls the run (submitting its tasks as
// the memory budget allows) and gets each block's object, queueing up to
// n blocks for the loop. The blocks queued are not charged to the
// memory budget: they are n blocks more in the store. Default 0: the run
// advances only while the loop asks for the next batch.
func Prefetch(n int) IterOption {
	return func(c *iterConfig) {
		if n < 0 {
			c.err = fmt.Errorf("%w: data: Prefetch(%d)", atoll.ErrInvalidArgument, n)
		}
		c.prefetch = n
	}
}

func iterOptions(opts []IterOption) iterConfig {
	var c iterConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// fetched is a block and its object's bytes (a view, valid while the
// block's ref is held).
type fetched struct {
	b   block
	raw atoll.Raw
}

// eachFetched runs d and calls each with every output block and its
// bytes, in order, releasing the block after each returns. With prefetch
// n > 0 a goroutine runs d and gets blocks ahead, at most n waiting.
func (d *Dataset) eachFetched(ctx context.Context, prefetch int, each func(block, atoll.Raw) (bool, error)) error {
	if prefetch == 0 {
		return d.execute(ctx, func(b block) (bool, error) {
			raw, err := atoll.Get(ctx, b.ref)
			if err != nil {
				return false, err
			}
			return each(b, raw)
		}, false)
	}
	pctx, cancel := context.WithCancel(ctx)
	// the producer holds one block while it waits to send it: n-1 more
	// wait in the channel
	ch := make(chan fetched, prefetch-1)
	done := make(chan struct{})
	var perr error
	go func() {
		defer close(done)
		defer close(ch)
		perr = d.execute(pctx, func(b block) (bool, error) {
			raw, err := atoll.Get(pctx, b.ref)
			if err != nil {
				b.release()
				return false, err
			}
			select {
			case ch <- fetched{b: b, raw: raw}:
				return true, nil
			case <-pctx.Done():
				b.release()
				return false, pctx.Err()
			}
		}, true)
	}()
	defer func() {
		cancel()
		for f := range ch {
			f.b.release()
		}
		<-done
	}()
	for f := range ch {
		more, err := each(f.b, f.raw)
		f.b.release()
		if err != nil || !more {
			return err
		}
	}
	<-done
	return perr
}
