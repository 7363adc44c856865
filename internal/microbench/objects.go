package microbench

import (
	"context"
	"errors"
	"sync"

	"github.com/atoll-runtime/atoll"
)

// Object metrics (put, get, wait on refs) and their mutex-map and memcpy
// baselines.

func getCalls(ctx context.Context, _ *env) (*workload, error) {
	ref, err := atoll.Put(ctx, 0)
	if err != nil {
		return nil, err
	}
	return &workload{units: 1, close: releaser(ref), op: func(ctx context.Context) error {
		_, err := atoll.Get(ctx, ref)
		return err
	}}, nil
}

func getCallsBase(context.Context, *env) (*workload, error) {
	t := newObjectTable()
	id := t.put([]byte{0}, nil)
	return &workload{units: 1, op: func(context.Context) error {
		if _, ok := t.get(id); !ok {
			return errors.New("microbench: baseline object missing")
		}
		return nil
	}}, nil
}

// putCalls puts a small value and drops its ref at once (Ray's put_small
// drops the ref it gets back).
func putCalls(context.Context, *env) (*workload, error) {
	return &workload{units: 1, op: func(ctx context.Context) error {
		ref, err := atoll.Put(ctx, 0)
		ref.Release()
		return err
	}}, nil
}

func putCallsBase(context.Context, *env) (*workload, error) {
	t := newObjectTable()
	return &workload{units: 1, op: func(context.Context) error {
		t.putRelease()
		return nil
	}}, nil
}

func multiPutCallsShape(e *env) map[string]any {
	return map[string]any{"clients": e.shapes.putClients, "client_kind": "task", "puts_per_client": e.shapes.putsPerClient}
}

func multiPutCalls(_ context.Context, e *env) (*workload, error) {
	s := e.shapes
	refs := make([]atoll.ObjectRef[int], s.putClients)
	return &workload{units: float64(s.putClients * s.putsPerClient), op: func(ctx context.Context) error {
		for i := range refs {
			refs[i] = putSmall.Remote(ctx, atoll.Value(s.putsPerClient))
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

func multiPutCallsBase(_ context.Context, e *env) (*workload, error) {
	s := e.shapes
	t := newObjectTable()
	return &workload{units: float64(s.putClients * s.putsPerClient), op: func(context.Context) error {
		var wg sync.WaitGroup
		for range s.putClients {
			wg.Go(func() {
				for range s.putsPerClient {
					t.putRelease()
				}
			})
		}
		wg.Wait()
		return nil
	}}, nil
}

// gigabytes converts int64 elements to 10^9 bytes.
func gigabytes(elems int) float64 { return float64(elems) * 8 / 1e9 }

func putGigabytesShape(e *env) map[string]any {
	return map[string]any{"bytes_per_put": e.shapes.largeElems * 8}
}

func putGigabytes(_ context.Context, e *env) (*workload, error) {
	xs := e.bigArray()
	return &workload{units: gigabytes(len(xs)), close: e.freeBigArray, op: func(ctx context.Context) error {
		ref, err := atoll.Put(ctx, xs)
		ref.Release()
		return err
	}}, nil
}

// putGigabytesBase copies the same array into a destination whose pages
// are already touched.
func putGigabytesBase(_ context.Context, e *env) (*workload, error) {
	xs := e.bigArray()
	dst := filledInt64s(len(xs))
	return &workload{units: gigabytes(len(xs)), op: func(context.Context) error {
		copy(dst, xs)
		return nil
	}}, nil
}

func multiPutGigabytesShape(e *env) map[string]any {
	s := e.shapes
	return map[string]any{"clients": s.largeClients, "client_kind": "task", "puts_per_client": s.largePuts, "bytes_per_put": s.largeClientElems * 8}
}

func multiPutGigabytes(_ context.Context, e *env) (*workload, error) {
	s := e.shapes
	refs := make([]atoll.ObjectRef[int], s.largeClients)
	args := putLargeArgs{Puts: s.largePuts, Elems: s.largeClientElems}
	return &workload{units: gigabytes(s.largeClients * s.largePuts * s.largeClientElems), op: func(ctx context.Context) error {
		for i := range refs {
			refs[i] = putLarge.Remote(ctx, atoll.Value(args))
		}
		return getAndRelease(ctx, refs)
	}}, nil
}

// multiPutGigabytesBase makes the same copies on as many goroutines as
// tasks run at once (one per CPU).
func multiPutGigabytesBase(_ context.Context, e *env) (*workload, error) {
	s := e.shapes
	p := newCopyPool(e.cpus, s.largeClientElems)
	return &workload{units: gigabytes(s.largeClients * s.largePuts * s.largeClientElems), op: func(context.Context) error {
		p.run(s.largeClients, s.largePuts)
		return nil
	}}, nil
}

func containingShape(e *env) map[string]any {
	return map[string]any{"contained_refs": e.shapes.containedRefs, "created_by": "driver"}
}

// getContaining gets one object holding refs to containedRefs small
// objects, then drops the refs it decoded. The driver creates it: a ref
// inside a value cannot cross processes yet (Ray creates it in a task).
func getContaining(ctx context.Context, e *env) (*workload, error) {
	inner := make([]atoll.ObjectRef[int], e.shapes.containedRefs)
	for i := range inner {
		ref, err := atoll.Put(ctx, 1)
		if err != nil {
			release(inner[:i])
			return nil, err
		}
		inner[i] = ref
	}
	container, err := atoll.Put(ctx, inner)
	release(inner) // the container holds them now
	if err != nil {
		return nil, err
	}
	return &workload{units: 1, close: releaser(container), op: func(ctx context.Context) error {
		refs, err := atoll.Get(ctx, container)
		release(refs)
		return err
	}}, nil
}

func getContainingBase(_ context.Context, e *env) (*workload, error) {
	t := newObjectTable()
	inner := make([]uint64, e.shapes.containedRefs)
	for i := range inner {
		inner[i] = t.put([]byte{1}, nil)
	}
	container := t.put(nil, inner)
	return &workload{units: 1, op: func(context.Context) error {
		borrowed, err := t.borrowContained(container)
		for _, id := range inner[:len(borrowed)] {
			t.release(id)
		}
		return err
	}}, nil
}

// releaser returns a close function that releases ref.
func releaser[T any](ref atoll.ObjectRef[T]) func(context.Context) error {
	return func(context.Context) error {
		ref.Release()
		return nil
	}
}
