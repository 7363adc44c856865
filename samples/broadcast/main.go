// Command broadcast is the broadcast benchmark (after Ray's and Dask's
// memory comparison): one large []float64 is
// put into the object store once and N tasks each read it and sum it.
// With a shared-memory store every task reads the same pages, so the
// whole run costs about one copy of memory.
//
// The baseline, measured in the same run, builds the same array in an
// ordinary Go slice and runs the same sums over the same number of
// goroutines: the ideal parallel time with no runtime at all.
//
//	go run ./samples/broadcast -size 1GiB -tasks 100 -json
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/floats"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/pss"
	"github.com/atoll-runtime/atoll/internal/shmfloor"
)

// sumTask is the work each task does: the same gonum summation the
// baseline runs.
var sumTask = atoll.NewFunc1("broadcast.sum", func(_ context.Context, xs []float64) (float64, error) {
	return floats.Sum(xs), nil
})

type options struct {
	size    benchfmt.Size
	tasks   int
	workers int
	store   benchfmt.Size
	repeat  int
	mode    string
	huge    string
	json    bool
}

func main() {
	if shmfloor.IsChild() { // a worker of the memfd floor (process mode)
		shmfloor.RunChild()
	}
	opts := options{size: benchfmt.Size(1 << 30), tasks: 100, workers: runtime.NumCPU()}
	flag.Var(&opts.size, "size", "size of the broadcast array (e.g. 256MiB, 1GiB)")
	flag.IntVar(&opts.tasks, "tasks", opts.tasks, "number of tasks that each sum the whole array")
	flag.IntVar(&opts.workers, "workers", opts.workers, "worker slots (CPUs) of the node")
	flag.Var(&opts.store, "store", "object store memory (default: twice -size)")
	flag.StringVar(&opts.mode, "mode", "process", "worker mode: process (worker processes) or inprocess (workers in this process)")
	flag.IntVar(&opts.repeat, "repeat", 3, "rounds of the two baselines and atoll (one cluster), taking turns; medians are reported")
	flag.StringVar(&opts.huge, "store-huge-pages", "auto", "huge pages for the object store: auto (where the system allows them for shared memory), on (required) or off")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per measurement (progress goes to stderr)")
	flag.Parse()
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	n := int(opts.size) / 8
	if n <= 0 || opts.tasks <= 0 || opts.workers <= 0 || opts.repeat <= 0 {
		return fmt.Errorf("broadcast: -size, -tasks, -workers and -repeat must be positive")
	}
	mode, err := atoll.ParseWorkerMode(opts.mode)
	if err != nil {
		return fmt.Errorf("broadcast: -mode: %w", err)
	}
	storeHuge, err := atoll.ParseHugePages(opts.huge)
	if err != nil {
		return fmt.Errorf("broadcast: -store-huge-pages: %w", err)
	}
	if opts.store == 0 {
		opts.store = 2 * opts.size
	}
	// Init first: in a worker process it serves tasks and never returns,
	// so nothing below runs there.
	if err := atoll.Init(ctx, atoll.WithWorkerMode(mode), atoll.WithNumCPUs(float64(opts.workers)),
		atoll.WithObjectStoreMemory(uint64(opts.store)), atoll.WithStoreHugePages(storeHuge)); err != nil {
		return err
	}
	defer atoll.Shutdown(ctx)
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "broadcast: "+format+"\n", args...) }

	var bases, sumsOnly, hugeBases, hugeSums, walls, puts []time.Duration
	var floors []shmfloor.Timing
	var want, hugeShare float64
	var peak uint64
	// In process mode the floor is the same sums by worker processes over
	// a memfd, the store's kind of memory, with no atoll: each maps it
	// afresh and makes its share of the sums.
	perWorker := (opts.tasks + opts.workers - 1) / opts.workers
	var memfd *shmfloor.Memfd
	if mode == atoll.ProcessWorkers {
		if memfd, err = shmfloor.NewMemfd(n); err != nil {
			return err
		}
		defer memfd.Close()
	}
	// The runs take turns, so that a drift in the machine's memory
	// bandwidth (a shared VM's) lands on every side alike: in each round a
	// slice on 4 KiB pages (as the store's shared memory is), a slice on
	// huge pages (the best a plain Go program gets here), then atoll.
	for i := range opts.repeat {
		for _, huge := range []bool{false, true} {
			pages := "4KiB pages"
			if huge {
				pages = "huge pages"
			}
			progress("round %d/%d: baseline, %s in a slice on %s, %d sums on %d goroutines", i+1, opts.repeat, benchfmt.FormatSize(int64(opts.size)), pages, opts.tasks, opts.workers)
			buf, err := newBaselineBuffer(n, huge)
			if err != nil {
				return err
			}
			base, sums, sum := baseline(buf, opts.tasks, opts.workers)
			if huge {
				hugeBases, hugeSums, hugeShare = append(hugeBases, base), append(hugeSums, sums), hugePageShare("AnonHugePages:", len(buf)*8)
			} else {
				bases, sumsOnly, want = append(bases, base), append(sumsOnly, sums), sum
			}
			if err := freeBaselineBuffer(buf); err != nil { // before measuring atoll's memory
				return err
			}
		}
		if memfd != nil {
			progress("round %d/%d: floor, %d worker processes each summing a memfd %d times", i+1, opts.repeat, opts.workers, perWorker)
			t, err := memfd.Procs(opts.workers, perWorker-1, false)
			if err != nil {
				return fmt.Errorf("broadcast: memfd floor: %w", err)
			}
			floors = append(floors, t)
		}
		progress("round %d/%d: atoll, put once, %d tasks on %d %s workers", i+1, opts.repeat, opts.tasks, opts.workers, mode)
		wall, put, err := broadcast(ctx, opts, n, want)
		if err != nil {
			return err
		}
		walls, puts = append(walls, wall), append(puts, put)
	}
	// Memory is measured in a run of its own, not timed: sampling PSS
	// walks the page tables of every process that maps the object (the
	// kernel's smaps_account), which took ~8% of a core from the timed
	// runs' tasks when they were sampled.
	progress("memory run: atoll again, PSS of the process tree sampled every second")
	sampler := pss.NewSampler(time.Second, func() []int {
		tree, _ := pss.Tree(os.Getpid()) // this process and its worker processes
		return tree
	})
	sampler.Start()
	_, _, err = broadcast(ctx, opts, n, want)
	peak = sampler.Stop()
	if err != nil {
		return err
	}
	// The object was written through this process's mapping of the store
	// (the node runs here): the share of it mapped by huge page entries.
	// With in-process workers the store is this process's own memory
	// (the baselines' slices are unmapped by now).
	storeField := "ShmemPmdMapped:"
	if mode == atoll.InProcessWorkers {
		storeField = "AnonHugePages:"
	}
	storeShare := hugePageShare(storeField, int(opts.size))
	base, wall, put := median(bases), median(walls), median(puts)
	tasks, sums := wall-put, median(sumsOnly)
	hugeBase, hugeSum := median(hugeBases), median(hugeSums)
	config := map[string]any{
		"size_bytes": int64(opts.size), "tasks": opts.tasks, "workers": opts.workers, "worker_mode": mode.String(),
		"object_store_bytes": int64(opts.store), "includes_creation": true, "atoll_version": benchfmt.Version(),
		"go": runtime.Version(), "cpus": runtime.NumCPU(), "repeat": opts.repeat, "statistic": "median", "baseline_pages": "4KiB",
		"store_huge_pages": storeHuge.String(), "store_huge_page_share": storeShare,
	}
	records := []benchfmt.Record{
		benchfmt.NewRecord("broadcast", "wall_s", wall.Seconds(), "s", "ideal_parallel_compute_s", base.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("broadcast", "put_s", put.Seconds(), "s", "slice_fill_s", (base - sums).Seconds(), config),
		benchfmt.NewRecord("broadcast", "tasks_s", tasks.Seconds(), "s", "ideal_parallel_sums_s", sums.Seconds(), config),
		benchfmt.NewRecord("broadcast", "peak_pss_bytes", float64(peak), "bytes", "object_size_bytes", float64(opts.size), config),
	}
	hugeConfig := maps.Clone(config)
	hugeConfig["baseline_pages"] = "huge"
	hugeConfig["baseline_huge_page_share"] = hugeShare
	records = append(records,
		benchfmt.NewRecord("broadcast", "wall_s_hugepage_baseline", wall.Seconds(), "s", "ideal_parallel_compute_s", hugeBase.Seconds(), hugeConfig).WithVerified(true),
		benchfmt.NewRecord("broadcast", "tasks_s_hugepage_baseline", tasks.Seconds(), "s", "ideal_parallel_sums_s", hugeSum.Seconds(), hugeConfig))
	var floor time.Duration
	if memfd != nil {
		// The memfd is no longer needed: its memory goes before PSS is
		// read by anyone else.
		_ = memfd.Close()
		totals := make([]time.Duration, len(floors))
		for i, t := range floors {
			totals[i] = t.Total()
		}
		floor = median(totals)
		floorConfig := maps.Clone(config)
		floorConfig["baseline"] = "memfd_worker_processes"
		floorConfig["floor_sums_per_worker"] = perWorker
		records = append(records,
			benchfmt.NewRecord("broadcast", "wall_s_memfd_floor", wall.Seconds(), "s", "slice_fill_and_memfd_procs_sums_s", (base-sums+floor).Seconds(), floorConfig).WithVerified(true),
			benchfmt.NewRecord("broadcast", "tasks_s_memfd_floor", tasks.Seconds(), "s", "memfd_procs_sums_s", floor.Seconds(), floorConfig))
	}
	if opts.json {
		return benchfmt.WriteAll(stdout, records)
	}
	fmt.Fprintf(stdout, "broadcast of %s to %d tasks on %d %s workers, median of %d runs (results verified)\n", benchfmt.FormatSize(int64(opts.size)), opts.tasks, opts.workers, mode, opts.repeat)
	fmt.Fprintf(stdout, "  atoll:    %.2fs = %.3fx the ideal %.2fs\n", wall.Seconds(), wall.Seconds()/base.Seconds(), base.Seconds())
	fmt.Fprintf(stdout, "    put    %.2fs vs filling a Go slice %.2fs\n", put.Seconds(), (base - sums).Seconds())
	fmt.Fprintf(stdout, "    tasks  %.2fs = %.3fx the ideal sums %.2fs\n", tasks.Seconds(), tasks.Seconds()/sums.Seconds(), sums.Seconds())
	fmt.Fprintf(stdout, "  against a slice on huge pages (%.0f%% of it huge): %.3fx the ideal %.2fs; tasks %.3fx the ideal sums %.2fs\n",
		100*hugeShare, wall.Seconds()/hugeBase.Seconds(), hugeBase.Seconds(), tasks.Seconds()/hugeSum.Seconds(), hugeSum.Seconds())
	if memfd != nil {
		fmt.Fprintf(stdout, "  against the floor, %d worker processes summing a memfd %d times each with no atoll: tasks %.3fx its %.2fs\n",
			opts.workers, perWorker, tasks.Seconds()/floor.Seconds(), floor.Seconds())
	}
	fmt.Fprintf(stdout, "  the store's huge pages: %s, %.0f%% of the object on them\n", storeHuge, 100*storeShare)
	fmt.Fprintf(stdout, "  peak PSS: %s = %.3fx the object size\n", benchfmt.FormatSize(int64(peak)), float64(peak)/float64(opts.size))
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// newBaselineBuffer maps the baseline's array: anonymous memory on 4 KiB
// pages, as the object store's shared memory is (shmem cannot use
// transparent huge pages unless the administrator enables them), or on
// huge pages where the system gives them (transparent huge pages in
// "always" or "madvise" mode). Its pages are touched before it is
// returned, so the baseline's fill writes warm pages, as atoll's put does
// after the first run (the store's pages are reused).
func newBaselineBuffer(n int, huge bool) ([]float64, error) {
	b, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("broadcast: map the baseline's array: %w", err)
	}
	advice := unix.MADV_NOHUGEPAGE
	if huge {
		advice = unix.MADV_HUGEPAGE
	}
	_ = unix.Madvise(b, advice)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0 // fault it in now, outside the timed fill
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), n), nil
}

// hugePageShare is the share of size bytes that this process maps with
// huge page entries, by field of /proc/self/smaps_rollup (AnonHugePages
// for anonymous memory, ShmemPmdMapped for shared memory).
func hugePageShare(field string, size int) float64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	var huge float64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			huge = kb * 1024
		}
	}
	return min(1, huge/float64(size))
}

func freeBaselineBuffer(xs []float64) error {
	return unix.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*8))
}

// baseline builds the array and sums it tasks times over workers
// goroutines. It returns the whole time, the time of the sums alone, and
// the expected sum.
func baseline(xs []float64, tasks, workers int) (total, sumsOnly time.Duration, sum float64) {
	start := time.Now()
	shmfloor.Fill(xs)
	filled := time.Now()
	sums := make([]float64, tasks)
	work := make(chan int, tasks)
	for i := range tasks {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				sums[i] = floats.Sum(xs)
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	runtime.KeepAlive(xs)
	return end.Sub(start), end.Sub(filled), sums[0]
}

// broadcast runs the benchmark on atoll and checks every task's sum.
func broadcast(ctx context.Context, opts options, n int, want float64) (wall, put time.Duration, err error) {
	start := time.Now()
	ref, err := atoll.PutWith(ctx, n, shmfloor.Fill)
	if err != nil {
		return 0, 0, err
	}
	put = time.Since(start)
	refs := make([]atoll.ObjectRef[float64], opts.tasks)
	for i := range refs {
		refs[i] = sumTask.Remote(ctx, ref)
	}
	sums, err := atoll.GetAll(ctx, refs)
	wall = time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	for i, s := range sums {
		if s != want {
			return 0, 0, fmt.Errorf("broadcast: task %d summed %v, want %v", i, s, want)
		}
	}
	ref.Release() // free the object before the next run
	return wall, put, nil
}
