// Command shmfloor measures what reading memory shared between processes
// costs on this machine, with no atoll at all: the floor under
// broadcast's process mode. Two workers sum one []float64 (gonum's
// floats.Sum, broadcast's task), in turns, three ways:
//
//   - anon: two goroutines over an anonymous slice on 4 KiB pages
//     (broadcast's baseline);
//   - memfd: two goroutines over a fresh MAP_SHARED mapping of a memfd
//     (the object store's kind of memory, in one process);
//   - procs: two child processes, each mapping the same memfd fresh
//     (broadcast's process mode without the runtime).
//
// Each worker's first pass over a fresh mapping is timed apart (first
// touch: faults, and on some hypervisors the host's shadow page tables);
// the steady passes after it are the sums, timed from a common start to
// the last worker's end.
//
//	go run ./samples/shmfloor -size 1GiB -sums 50 -repeat 3 -json
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/floats"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/shmfloor"
)

type options struct {
	size   benchfmt.Size
	sums   int
	repeat int
	json   bool
	// populate prefaults each fresh memfd mapping (MADV_POPULATE_READ)
	// before its first pass, to tell the faults' cost from the rest.
	populate bool
}

func main() {
	if shmfloor.IsChild() {
		shmfloor.RunChild()
	}
	opts := options{size: 1 << 30}
	flag.Var(&opts.size, "size", "array size (e.g. 1GiB)")
	flag.IntVar(&opts.sums, "sums", 50, "steady sums per worker")
	flag.IntVar(&opts.repeat, "repeat", 3, "rounds of (anon, memfd, procs); medians are reported")
	flag.BoolVar(&opts.json, "json", false, "print one JSON record per metric")
	flag.BoolVar(&opts.populate, "populate", false, "prefault each fresh memfd mapping (MADV_POPULATE_READ) before its first pass")
	flag.Parse()
	if err := run(opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

func run(opts options, stdout, stderr io.Writer) error {
	n := int(opts.size) / 8
	if n < 1 || opts.sums < 1 || opts.repeat < 1 {
		return fmt.Errorf("shmfloor: -size, -sums and -repeat must be positive")
	}
	memfd, err := shmfloor.NewMemfd(n)
	if err != nil {
		return err
	}
	defer memfd.Close()
	want := memfd.Want
	anon, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	defer unix.Munmap(anon)
	_ = unix.Madvise(anon, unix.MADV_NOHUGEPAGE) // 4 KiB pages, as the store's
	anonXs := shmfloor.AsFloats(anon)
	shmfloor.Fill(anonXs)

	var anonT, memfdT, procsT []shmfloor.Timing
	for r := range opts.repeat {
		fmt.Fprintf(stderr, "shmfloor: round %d/%d\n", r+1, opts.repeat)
		t, err := threads(func() ([]float64, func(), error) { return anonXs, func() {}, nil }, opts.sums, want)
		if err != nil {
			return fmt.Errorf("anon: %w", err)
		}
		anonT = append(anonT, t)
		t, err = threads(func() ([]float64, func(), error) {
			xs, err := memfd.Map()
			if err == nil && opts.populate {
				err = shmfloor.Populate(xs)
			}
			return xs, func() { shmfloor.Unmap(xs) }, err
		}, opts.sums, want)
		if err != nil {
			return fmt.Errorf("memfd: %w", err)
		}
		memfdT = append(memfdT, t)
		if t, err = memfd.Procs(2, opts.sums, opts.populate); err != nil {
			return fmt.Errorf("procs: %w", err)
		}
		procsT = append(procsT, t)
	}
	a, m, p := shmfloor.Median(anonT), shmfloor.Median(memfdT), shmfloor.Median(procsT)
	config := map[string]any{"size_bytes": n * 8, "sums_per_worker": opts.sums, "workers": 2, "repeat": opts.repeat, "populate": opts.populate,
		"page_size": os.Getpagesize(), "gomaxprocs": runtime.GOMAXPROCS(0)}
	records := []benchfmt.Record{
		benchfmt.NewRecord("shmfloor", "memfd_threads_sums_s", m.Sums.Seconds(), "s", "anon_threads_sums_s", a.Sums.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("shmfloor", "memfd_procs_sums_s", p.Sums.Seconds(), "s", "anon_threads_sums_s", a.Sums.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("shmfloor", "memfd_procs_vs_threads_sums_s", p.Sums.Seconds(), "s", "memfd_threads_sums_s", m.Sums.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("shmfloor", "memfd_procs_first_touch_s", p.First.Seconds(), "s", "memfd_threads_first_touch_s", m.First.Seconds(), config),
	}
	if opts.json {
		return benchfmt.WriteAll(stdout, records)
	}
	fmt.Fprintf(stdout, "steady sums (%d per worker, 2 workers): anon %.3fs  memfd %.3fs (%.3fx)  procs %.3fs (%.3fx anon, %.3fx memfd)\n",
		opts.sums, a.Sums.Seconds(), m.Sums.Seconds(), m.Sums.Seconds()/a.Sums.Seconds(),
		p.Sums.Seconds(), p.Sums.Seconds()/a.Sums.Seconds(), p.Sums.Seconds()/m.Sums.Seconds())
	fmt.Fprintf(stdout, "first pass over a fresh mapping: memfd (one process) %.3fs  procs %.3fs\n", m.First.Seconds(), p.First.Seconds())
	return nil
}

// threads runs two goroutines, each on its own OS thread, over the array
// view returns (called once per worker: a fresh mapping, or the same
// slice), timing a first pass and then sums steady passes from a common
// start.
func threads(view func() ([]float64, func(), error), sums int, want float64) (shmfloor.Timing, error) {
	var (
		wg     sync.WaitGroup
		ready  sync.WaitGroup
		start  = make(chan struct{})
		firsts [2]time.Duration
		ends   [2]time.Time
		errs   [2]error
	)
	for w := range 2 {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			xs, release, err := view()
			if err != nil {
				errs[w] = err
				ready.Done()
				return
			}
			defer release()
			t := time.Now()
			got := floats.Sum(xs)
			firsts[w] = time.Since(t)
			ready.Done()
			<-start
			for range sums {
				got = floats.Sum(xs)
			}
			ends[w] = time.Now()
			if got != want {
				errs[w] = fmt.Errorf("worker %d summed %g, want %g", w, got, want)
			}
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return shmfloor.Timing{}, err
	}
	return shmfloor.Timing{First: max(firsts[0], firsts[1]), Sums: latest(ends).Sub(t0)}, nil
}

func latest(ts [2]time.Time) time.Time {
	if ts[0].After(ts[1]) {
		return ts[0]
	}
	return ts[1]
}
