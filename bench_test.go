package atoll_test

import (
	"context"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
)

var noop = atoll.NewFunc0("bench.noop", func(context.Context) (int, error) { return 0, nil })

func startBench(b *testing.B) context.Context {
	b.Helper()
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(1<<30), atoll.WithWorkerMode(atoll.InProcessWorkers)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = atoll.Shutdown(ctx) })
	return ctx
}

// BenchmarkTasksSync is Ray's single_client_tasks_sync: submit one no-op
// task and wait for it, over and over.
func BenchmarkTasksSync(b *testing.B) {
	ctx := startBench(b)
	for b.Loop() {
		if _, err := atoll.Get(ctx, noop.Remote(ctx)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkTasksAsync is Ray's single_client_tasks_async: batches of 1,000
// no-op tasks submitted at once, then waited for.
func BenchmarkTasksAsync(b *testing.B) {
	ctx := startBench(b)
	refs := make([]atoll.ObjectRef[int], 1000)
	for b.Loop() {
		for i := range refs {
			refs[i] = noop.Remote(ctx)
		}
		if _, err := atoll.GetAll(ctx, refs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(refs))/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkPutGetSmall puts and gets one small (inline) value.
func BenchmarkPutGetSmall(b *testing.B) {
	ctx := startBench(b)
	for b.Loop() {
		ref, err := atoll.Put(ctx, 42)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := atoll.Get(ctx, ref); err != nil {
			b.Fatal(err)
		}
		ref.Release()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkPutLarge puts 64 MiB into shared memory; the baseline is a
// memcpy of the same bytes into a fresh Go slice.
func BenchmarkPutLarge(b *testing.B) {
	data := make([]byte, 64<<20)
	b.Run("memcpy-baseline", func(b *testing.B) {
		// Into a buffer whose pages are already faulted in, as the store's
		// pages are after the first put.
		dst := make([]byte, len(data))
		copy(dst, data)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			copy(dst, data)
		}
	})
	b.Run("atoll-put", func(b *testing.B) {
		ctx := startBench(b)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			ref, err := atoll.Put(ctx, data)
			if err != nil {
				b.Fatal(err)
			}
			ref.Release()
		}
	})
}

// BenchmarkGet64MiBFloat64 compares Get, which copies a stored []float64
// out of shared memory, with GetView, which pins it and returns a view,
// on one 64 MiB object (8 Mi float64s). The baseline is slices.Clone of
// the same array on the Go heap: what any copy costs on the machine.
func BenchmarkGet64MiBFloat64(b *testing.B) {
	ctx := startBench(b)
	ref, err := atoll.PutWith(ctx, 8<<20, func(xs []float64) {
		for i := range xs {
			xs[i] = float64(i)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Release()
	b.Run("baseline-clone", func(b *testing.B) {
		heap := make([]float64, 8<<20)
		b.SetBytes(64 << 20)
		for b.Loop() {
			if len(slices.Clone(heap)) != 8<<20 {
				b.Fatal("short clone")
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for b.Loop() {
			xs, err := atoll.Get(ctx, ref)
			if err != nil || len(xs) != 8<<20 {
				b.Fatal(len(xs), err)
			}
		}
	})
	b.Run("view", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for b.Loop() {
			v, err := atoll.GetView(ctx, ref)
			if err != nil || v.Len() != 8<<20 {
				b.Fatal(v.Len(), err)
			}
			v.Release()
		}
	})
}

func startBenchProcesses(b *testing.B) context.Context {
	b.Helper()
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(1<<30), atoll.WithNumCPUs(2), atoll.WithWorkerMode(atoll.ProcessWorkers)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = atoll.Shutdown(ctx) })
	return ctx
}

// BenchmarkProcessTasksSync is BenchmarkTasksSync with worker processes
// (the driver's side: -benchmem counts the driver's allocations per task).
func BenchmarkProcessTasksSync(b *testing.B) {
	ctx := startBenchProcesses(b)
	defer allocsPer(b, "allocs/task")()
	for b.Loop() {
		if _, err := atoll.Get(ctx, noop.Remote(ctx)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// allocsPer returns what reports the process's allocations per op since
// it was called, as unit, to a hundredth: -benchmem's allocs/op rounds
// down to a whole number, and records made a run at a time (package
// slab) count as a share of an allocation each.
func allocsPer(b *testing.B, unit string) func() {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	start := m.Mallocs
	return func() {
		goruntime.ReadMemStats(&m)
		b.ReportMetric(float64(m.Mallocs-start)/float64(b.N), unit)
	}
}

// BenchmarkProcessTasksAsync is BenchmarkTasksAsync with worker
// processes, one task per op (the batches of 1,000 are submitted across
// ops), so -benchmem reports the driver's allocations per task.
func BenchmarkProcessTasksAsync(b *testing.B) {
	ctx := startBenchProcesses(b)
	pipelined(b, ctx, "tasks/s", func() atoll.ObjectRef[int] { return noop.Remote(ctx) })
}

// pipelined runs submit once per op, waiting for the refs a thousand at
// a time, and reports the rate as unit.
func pipelined(b *testing.B, ctx context.Context, unit string, submit func() atoll.ObjectRef[int]) {
	refs := make([]atoll.ObjectRef[int], 0, 1000)
	defer allocsPer(b, "allocs/"+strings.TrimSuffix(unit, "s/s"))()
	for b.Loop() {
		refs = append(refs, submit())
		if len(refs) == cap(refs) {
			if _, err := atoll.GetAll(ctx, refs); err != nil {
				b.Fatal(err)
			}
			refs = refs[:0]
		}
	}
	if _, err := atoll.GetAll(ctx, refs); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

type benchActor struct{}

var (
	benchActorType = atoll.NewActorType("bench.Actor", func(context.Context) (*benchActor, error) { return &benchActor{}, nil })
	benchActorNoop = atoll.NewMethod0(benchActorType, "noop", func(*benchActor, context.Context) (int, error) { return 0, nil })
)

// BenchmarkProcessActorCallsAsync is Ray's 1_1_actor_calls_async with the
// actor in a worker process, one call per op (batches of 1,000 waited
// for across ops): -benchmem reports the caller's allocations per call.
func BenchmarkProcessActorCallsAsync(b *testing.B) {
	ctx := startBenchProcesses(b)
	a, err := benchActorType.New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	pipelined(b, ctx, "calls/s", func() atoll.ObjectRef[int] { return benchActorNoop.Remote(ctx, a) })
}
