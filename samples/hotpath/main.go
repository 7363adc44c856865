// Command hotpath measures what one task and one actor call cost on
// atoll's hot path with worker processes: the rate of no-op tasks (or
// calls) submitted in batches of 1,000 and gathered with GetAll, as Ray's
// tasks_async and actor_calls_async do (-batch 1: one at a time, as
// tasks_sync and actor_calls_sync do), and the CPU each one takes in the
// driver (submitting, scheduling, sending, receiving) and in the worker
// processes (running it). The baseline, in the same run, is the same
// workload with pipelining off (WithPipelineDepth(1): one task or call in
// a worker process at a time).
//
//	go run ./samples/hotpath -n 30000 -json
//	go run ./samples/hotpath -n 5000 -batch 1 -json
//	go run ./samples/hotpath -floor -n 20000 -json
//
// -floor measures instead what a synchronous round trip between two
// processes costs with no runtime: 64 bytes back and forth between the
// driver and a child process over a unix socket pair, read through Go's
// netpoller on both sides (p50 and p99), against two goroutines passing
// them over channels. It is the floor under tasks_sync and
// actor_calls_sync in process mode.
//
// CPU is read from the kernel's accounting: getrusage for the driver,
// /proc/PID/stat for its worker processes (children of the driver), over
// the measured window only (a warm-up of 5,000 ops runs first).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

var noop = atoll.NewFunc0("hotpath.noop", func(context.Context) (int, error) { return 1, nil })

type counter struct{ n int }

var (
	counterType = atoll.NewActorType("hotpath.counter", func(context.Context) (*counter, error) { return &counter{}, nil })
	inc         = atoll.NewMethod0(counterType, "Inc", func(c *counter, _ context.Context) (int, error) {
		c.n++
		return c.n, nil
	})
)

// batch is how many ops are submitted before they are gathered with
// GetAll (-batch; 1 measures the synchronous path: one op in flight).
var batch = 1000

// The -cpuprofile and -trace flags: where the driver's CPU profile and
// execution trace of the first pipelined window go.
var (
	cpuProfile, traceOut   string
	profileFile, traceFile *os.File
)

// result is one measured window.
type result struct {
	rate             float64 // ops per second
	driverUs, workUs float64 // CPU microseconds per op
	ops, depth       int
	mode             string
}

func main() {
	serveEcho()
	ctx := context.Background()
	if atoll.IsWorker() {
		if err := atoll.Init(ctx); err != nil {
			log.Fatal(err)
		}
	}
	n := flag.Int("n", 30000, "ops measured per mode (after 5,000 warm-up ops)")
	depth := flag.Int("depth", 16, "pipeline depth measured (the baseline runs depth 1)")
	modes := flag.String("modes", "tasks,calls", "what to measure: tasks, calls or both")
	cpus := flag.Float64("cpus", 2, "CPUs of the embedded node")
	jsonOut := flag.Bool("json", false, "print one JSON line per figure")
	flag.IntVar(&batch, "batch", batch, "ops submitted before gathering them (1: synchronous, one op in flight)")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write the driver's CPU profile of the measured (pipelined) windows to this file")
	flag.StringVar(&traceOut, "trace", "", "write the driver's execution trace of the first measured (pipelined) window to this file, each batch a region named \"op\" (go tool trace)")
	floorOnly := flag.Bool("floor", false, "measure only the floor: -n synchronous round trips between two processes over a unix socket, no runtime")
	flag.Parse()
	if *floorOnly {
		floor(*jsonOut, *n)
		return
	}
	profileFile, traceFile = createOutput(cpuProfile), createOutput(traceOut)
	defer closeOutput(profileFile)
	defer closeOutput(traceFile)
	if batch < 1 || *n < batch || *depth < 1 {
		log.Fatalf("hotpath: -batch and -depth must be at least 1, and -n at least -batch (%d)", batch)
	}
	for _, mode := range strings.Split(*modes, ",") {
		if mode != "tasks" && mode != "calls" {
			log.Fatalf("hotpath: unknown mode %q (tasks or calls)", mode)
		}
		base := measure(ctx, mode, 1, *n, *cpus)
		got := measure(ctx, mode, *depth, *n, *cpus)
		report(*jsonOut, got, base)
	}
}

// createOutput creates the file a flag names, or returns nil for none.
func createOutput(path string) *os.File {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	return f
}

// closeOutput closes a file createOutput made, if any.
func closeOutput(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}

func measure(ctx context.Context, mode string, depth, n int, cpus float64) result {
	if err := atoll.Init(ctx, atoll.WithNumCPUs(cpus), atoll.WithObjectStoreMemory(256<<20), atoll.WithPipelineDepth(depth)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := atoll.Shutdown(ctx); err != nil {
			log.Fatal(err)
		}
	}()
	var a atoll.ActorHandle[*counter]
	if mode == "calls" {
		var err error
		if a, err = counterType.New(ctx); err != nil {
			log.Fatal(err)
		}
	}
	traced := false
	run := func(count int) {
		refs := make([]atoll.ObjectRef[int], batch)
		for done := 0; done < count; done += batch {
			var region *trace.Region
			if traced {
				region = trace.StartRegion(ctx, "op")
			}
			for i := range refs {
				if mode == "calls" {
					refs[i] = inc.Remote(ctx, a)
				} else {
					refs[i] = noop.Remote(ctx)
				}
			}
			if _, err := atoll.GetAll(ctx, refs); err != nil {
				log.Fatal(err)
			}
			if region != nil {
				region.End()
			}
		}
	}
	run(5000 - 5000%batch)
	profiled := profileFile != nil && depth > 1
	if profiled {
		if err := pprof.StartCPUProfile(profileFile); err != nil {
			log.Fatal(err)
		}
	}
	if traced = traceFile != nil && depth > 1; traced {
		if err := trace.Start(traceFile); err != nil {
			log.Fatal(err)
		}
	}
	d0, w0, t0 := selfCPU(), childrenCPU(), time.Now()
	run(n)
	wall, driver, work := time.Since(t0), selfCPU()-d0, childrenCPU()-w0
	if profiled {
		pprof.StopCPUProfile()
		profileFile = nil // one profile per file: the first pipelined mode
	}
	if traced {
		trace.Stop()
		traceFile = nil // likewise
	}
	return result{
		rate: float64(n) / wall.Seconds(), driverUs: float64(driver.Microseconds()) / float64(n), workUs: float64(work.Microseconds()) / float64(n),
		ops: n, depth: depth, mode: mode,
	}
}

func report(asJSON bool, got, base result) {
	cfg := map[string]any{"ops": got.ops, "batch": batch, "pipeline_depth": got.depth, "baseline_pipeline_depth": base.depth,
		"worker_mode": "process", "atoll_version": benchfmt.Version()}
	name := map[string]string{"tasks": "tasks_async", "calls": "actor_calls_async"}[got.mode]
	if batch == 1 {
		name = map[string]string{"tasks": "tasks_sync", "calls": "actor_calls_sync"}[got.mode]
	}
	recs := []benchfmt.Record{
		benchfmt.NewRecord("hotpath", name+"_per_s", got.rate, "1/s", "same_without_pipelining_per_s", base.rate, cfg),
		benchfmt.NewRecord("hotpath", name+"_driver_cpu_us_per_op", got.driverUs, "us", "same_without_pipelining_us", base.driverUs, cfg),
		benchfmt.NewRecord("hotpath", name+"_worker_cpu_us_per_op", got.workUs, "us", "same_without_pipelining_us", base.workUs, cfg),
	}
	emit(asJSON, recs)
}

// emit prints recs, as JSON lines or as a table.
func emit(asJSON bool, recs []benchfmt.Record) {
	if asJSON {
		if err := benchfmt.WriteAll(os.Stdout, recs); err != nil {
			log.Fatal(err)
		}
		return
	}
	for _, r := range recs {
		fmt.Printf("%-42s %10.1f %-4s baseline %10.1f  ratio %.2f\n", r.Metric, r.Value, r.Unit, r.BaselineValue, r.Ratio)
	}
}

// selfCPU is the CPU this process has used (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU sums the CPU time of this process's live children (its
// worker processes) from /proc: clock ticks of 1/100 s.
func childrenCPU() time.Duration {
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) in ")".
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 || f[1] != me { // f[1] is the parent pid
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
