// Command flood submits a large number of no-op tasks at once from one
// driver (a million by default: Ray's single-node envelope of queued
// tasks), gathers their results, drops every ref, and reports what that
// cost: the submit rate, the wall time, the driver's peak memory and what
// it keeps after the drop.
//
//	go run ./samples/flood -json
//	go run ./samples/flood -tasks 100000 -json
//	go run ./samples/flood -calls -json   # method calls to one actor
//
// The driver is the embedded node's process (it also hosts the raylet,
// the object store's index and the control store); the tasks run in
// worker processes. Memory is the driver's resident set (VmRSS, its peak
// VmHWM from /proc/self/status) and its Go heap, and the peak PSS summed
// over the driver and its worker processes; both peaks cover submitting,
// gathering and the drop (a million refs found garbage at once, their
// objects freed). "Idle" is the driver after a
// warm-up of 1,000 tasks, before the flood; "after the drop" is once the
// owner table holds none of the flood's tasks and objects, after a
// garbage collection that returns freed memory to the system.
//
// The baseline, in the same run and before it, is the same number of
// no-op functions run by one goroutine per CPU pulling from a channel,
// their results written to a slice: what a Go program gets without atoll.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/pss"
)

var noop = atoll.NewFunc1("flood.noop", func(_ context.Context, i int) (int, error) { return i, nil })

// echo is the no-op of -calls: a method of one actor.
type echoer struct{}

var (
	echoerType = atoll.NewActorType("flood.echoer", func(context.Context) (*echoer, error) { return &echoer{}, nil })
	echo       = atoll.NewMethod1(echoerType, "Echo", func(_ *echoer, _ context.Context, i int) (int, error) { return i, nil })
)

type options struct {
	tasks int
	// calls floods one actor with method calls instead of tasks.
	calls   bool
	cpus    int
	store   uint64
	json    bool
	timeout time.Duration
	// memProfile, when set, is where heap profiles go: .submitted once
	// every task is submitted, .gathered once every result is gathered,
	// .dropped after the drop.
	memProfile string
	// cpuProfile, when set, is where the driver's CPU profile of the
	// flood (submit and gather) goes.
	cpuProfile string
}

func main() {
	ctx := context.Background()
	if atoll.IsWorker() {
		if err := atoll.Init(ctx); err != nil {
			log.Fatal(err)
		}
	}
	var o options
	flag.IntVar(&o.tasks, "tasks", 1_000_000, "tasks (or calls) submitted at once")
	flag.BoolVar(&o.calls, "calls", false, "submit method calls to one actor instead of tasks")
	flag.IntVar(&o.cpus, "cpus", 2, "CPUs of the embedded node (and goroutines of the baseline)")
	store := flag.String("store", "256MiB", "object store memory")
	flag.BoolVar(&o.json, "json", false, "print one JSON line per figure")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.StringVar(&o.memProfile, "memprofile", "", "write the driver's heap profiles to `PATH`.submitted (every task submitted), PATH.gathered (every result gathered) and PATH.dropped (after the drop)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write the driver's CPU profile of the flood (submitting and gathering) to this file")
	flag.Parse()
	n, err := benchfmt.ParseSize(*store)
	if err != nil {
		log.Fatalf("flood: -store: %v", err)
	}
	o.store = uint64(n)
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// memory is the driver's memory at one moment.
type memory struct {
	pss.Resident        // RSS and its peak (VmRSS, VmHWM)
	heap         uint64 // Go heap in use (HeapInuse)
}

func readMemory() (memory, error) {
	r, err := pss.ReadResident(os.Getpid())
	if err != nil {
		return memory{}, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{Resident: r, heap: ms.HeapInuse}, nil
}

// floodSampling is how often the flood's PSS is sampled. Reading the
// smaps of a driver of a gigabyte or more takes the kernel tens of
// milliseconds; sampled every 100 ms, that was an eighth of the driver's
// CPU profile, taken from the run it measures. The heap grows and
// shrinks over seconds, so sampling less often misses little (the
// driver's own peak RSS is exact: VmHWM).
const floodSampling = 500 * time.Millisecond

// resetPeak starts the driver's peak RSS again from its current RSS.
func resetPeak() error { return pss.ResetPeak(os.Getpid()) }

// runtimeClasses are the Go runtime's memory classes that a drained
// flood leaves above idle: what the RSS after the drop is made of.
func runtimeClasses() string {
	classes := []struct{ name, what string }{
		{"/memory/classes/heap/objects:bytes", "heap objects"},
		{"/memory/classes/metadata/mspan/free:bytes", "span records kept free"},
		{"/memory/classes/metadata/other:bytes", "other metadata"},
		{"/memory/classes/other:bytes", "other"},
	}
	samples := make([]metrics.Sample, len(classes))
	for i, c := range classes {
		samples[i].Name = c.name
	}
	metrics.Read(samples)
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = c.what + " " + benchfmt.HumanSize(samples[i].Value.Uint64())
	}
	return strings.Join(parts, ", ")
}

// settle collects garbage and returns freed memory to the system.
func settle() { runtime.GC(); debug.FreeOSMemory() }

// result is one way of running the tasks.
type result struct {
	submit, wall time.Duration
	peak         uint64 // VmHWM during the run less RSS before it
	peakPss      uint64
}

func run(ctx context.Context, o options, out, progress io.Writer) error {
	if o.tasks < 1 || o.cpus < 1 {
		return fmt.Errorf("flood: -tasks and -cpus must be at least 1 (%d, %d)", o.tasks, o.cpus)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	base, err := baseline(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "flood: baseline: %d no-ops on %d goroutines in %v, peak +%s\n", o.tasks, o.cpus, base.wall, benchfmt.HumanSize(base.peak))

	if err := atoll.Init(ctx, atoll.WithNumCPUs(float64(o.cpus)), atoll.WithObjectStoreMemory(o.store)); err != nil {
		return err
	}
	defer func() { _ = atoll.Shutdown(context.Background()) }()
	submit := func(i int) atoll.ObjectRef[int] { return noop.Remote(ctx, atoll.Value(i)) }
	what := "tasks"
	if o.calls {
		a, err := echoerType.New(ctx)
		if err != nil {
			return err
		}
		submit = func(i int) atoll.ObjectRef[int] { return echo.Remote(ctx, a, atoll.Value(i)) }
		what = "calls"
	}
	warm := make([]atoll.ObjectRef[int], 1000)
	for i := range warm {
		warm[i] = submit(i)
	}
	if _, err := atoll.GetAll(ctx, warm); err != nil {
		return err
	}
	warm = nil
	if err := drained(ctx); err != nil {
		return err
	}
	settle()
	idle, err := readMemory()
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "flood: idle driver: RSS %s, heap %s\n", benchfmt.HumanSize(idle.RSS), benchfmt.HumanSize(idle.heap))
	fmt.Fprintf(progress, "flood: the Go runtime's memory at idle: %s\n", runtimeClasses())

	sampler := pss.NewSampler(floodSampling, func() []int {
		pids, _ := pss.Tree(os.Getpid())
		return pids
	})
	if err := resetPeak(); err != nil {
		return err
	}
	before, err := readMemory()
	if err != nil {
		return err
	}
	sampler.Start()
	stopProfile, err := cpuProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	var got result
	t0 := time.Now()
	refs := make([]atoll.ObjectRef[int], o.tasks)
	for i := range refs {
		refs[i] = submit(i)
		if (i+1)%100_000 == 0 {
			fmt.Fprintf(progress, "flood: submitted %d %s in %v\n", i+1, what, time.Since(t0).Round(time.Millisecond))
		}
	}
	got.submit = time.Since(t0)
	if err := heapProfile(o.memProfile, "submitted"); err != nil {
		return err
	}
	vals, err := atoll.GetAll(ctx, refs)
	if err != nil {
		return err
	}
	got.wall = time.Since(t0)
	stopProfile()
	if err := heapProfile(o.memProfile, "gathered"); err != nil {
		return err
	}
	for i, v := range vals {
		if v != i {
			return fmt.Errorf("flood: task %d returned %d", i, v)
		}
	}
	gathered, err := readMemory()
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "flood: %d %s submitted in %v, gathered in %v; driver peak RSS %s\n", o.tasks, what, got.submit, got.wall, benchfmt.HumanSize(gathered.Peak))

	// The peaks include the drop: a million refs found garbage at once
	// and their objects freed is part of what the flood costs.
	refs, vals = nil, nil
	t1 := time.Now()
	if err := drained(ctx); err != nil {
		return err
	}
	dropped := time.Since(t1)
	got.peakPss = sampler.Stop()
	peak, err := readMemory()
	if err != nil {
		return err
	}
	got.peak = peak.Peak - min(before.RSS, peak.Peak)
	fmt.Fprintf(progress, "flood: driver peak RSS with the drop %s\n", benchfmt.HumanSize(peak.Peak))
	settle()
	if err := heapProfile(o.memProfile, "dropped"); err != nil {
		return err
	}
	after, err := readMemory()
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "flood: after the drop (%v): RSS %s, heap %s\n", dropped.Round(time.Millisecond), benchfmt.HumanSize(after.RSS), benchfmt.HumanSize(after.heap))
	fmt.Fprintf(progress, "flood: the Go runtime's memory after the drop: %s\n", runtimeClasses())

	cfg := map[string]any{"tasks": o.tasks, "actor_calls": o.calls, "cpus": o.cpus, "object_store_memory": o.store, "worker_mode": "process",
		"atoll_version": benchfmt.Version()}
	perTask := func(b uint64) float64 { return float64(b) / float64(o.tasks) }
	recs := []benchfmt.Record{
		benchfmt.NewRecord("flood", "submit_per_s", float64(o.tasks)/got.submit.Seconds(), "1/s", "goroutine_pool_submit_per_s", float64(o.tasks)/base.submit.Seconds(), cfg),
		benchfmt.NewRecord("flood", "wall_s", got.wall.Seconds(), "s", "goroutine_pool_wall_s", base.wall.Seconds(), cfg).WithVerified(true), // every result checked
		benchfmt.NewRecord("flood", "driver_peak_rss_bytes", float64(peak.Peak), "bytes", "driver_idle_rss_bytes", float64(idle.RSS), cfg),
		benchfmt.NewRecord("flood", "driver_peak_bytes_per_task", perTask(got.peak), "bytes", "goroutine_pool_peak_bytes_per_task", perTask(base.peak), cfg),
		benchfmt.NewRecord("flood", "peak_pss_bytes", float64(got.peakPss), "bytes", "goroutine_pool_peak_pss_bytes", float64(base.peakPss), cfg),
		benchfmt.NewRecord("flood", "driver_rss_after_drop_bytes", float64(after.RSS), "bytes", "driver_idle_rss_bytes", float64(idle.RSS), cfg),
		benchfmt.NewRecord("flood", "driver_heap_after_drop_bytes", float64(after.heap), "bytes", "driver_idle_heap_bytes", float64(idle.heap), cfg),
	}
	if o.json {
		return benchfmt.WriteAll(out, recs)
	}
	for _, r := range recs {
		fmt.Fprintf(out, "%-30s %14.1f %-5s baseline %14.1f  ratio %.3f\n", r.Metric, r.Value, r.Unit, r.BaselineValue, r.Ratio)
	}
	return nil
}

// heapProfile writes the heap profile to path.suffix, after a garbage
// collection (nothing when path is empty).
func heapProfile(path, suffix string) error {
	if path == "" {
		return nil
	}
	runtime.GC()
	f, err := os.Create(path + "." + suffix)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drained waits until this driver owns none of the flood's objects and no
// task of it is pending, collecting garbage so dropped refs are released.
func drained(ctx context.Context) error {
	for {
		runtime.GC()
		m, err := atolltest.Memory(ctx)
		if err != nil {
			return err
		}
		if m.OwnedObjects == 0 && m.PendingTasks == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("flood: the driver still owns %d objects and %d pending tasks: %w", m.OwnedObjects, m.PendingTasks, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// baseline runs o.tasks no-op functions on o.cpus goroutines fed by a
// channel, results in a slice, and measures it the same way.
func baseline(o options) (result, error) {
	settle()
	if err := resetPeak(); err != nil {
		return result{}, err
	}
	before, err := readMemory()
	if err != nil {
		return result{}, err
	}
	sampler := pss.NewSampler(100*time.Millisecond, func() []int { return []int{os.Getpid()} })
	sampler.Start()
	f := func(i int) int { return i }
	var r result
	t0 := time.Now()
	work := make(chan int, o.tasks)
	results := make([]int, o.tasks)
	var wg sync.WaitGroup
	for range o.cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = f(i)
			}
		}()
	}
	for i := 0; i < o.tasks; i++ {
		work <- i
	}
	close(work)
	r.submit = time.Since(t0)
	wg.Wait()
	r.wall = time.Since(t0)
	r.peakPss = sampler.Stop()
	for i, v := range results {
		if v != i {
			return result{}, fmt.Errorf("flood: baseline task %d returned %d", i, v)
		}
	}
	peak, err := readMemory()
	if err != nil {
		return result{}, err
	}
	r.peak = peak.Peak - min(before.RSS, peak.Peak)
	return r, nil
}

// cpuProfile starts the driver's CPU profile into path (nothing if path
// is empty) and returns what stops it.
func cpuProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
