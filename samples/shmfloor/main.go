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
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/floats"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// childEnv, set in a child's environment, makes the program a summing
// child: it maps the memfd it inherits as fd 3.
const childEnv = "SHMFLOOR_CHILD"

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
	if os.Getenv(childEnv) != "" {
		if err := child(os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
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

// timing is one way's figures in one round.
type timing struct {
	first time.Duration // the slowest worker's first pass
	sums  time.Duration // common start to the last worker's end
}

func run(opts options, stdout, stderr io.Writer) error {
	n := int(opts.size) / 8
	if n < 1 || opts.sums < 1 || opts.repeat < 1 {
		return fmt.Errorf("shmfloor: -size, -sums and -repeat must be positive")
	}
	fd, err := unix.MemfdCreate("shmfloor", 0)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	memfd := os.NewFile(uintptr(fd), "shmfloor")
	defer memfd.Close()
	if err := unix.Fallocate(fd, 0, 0, int64(n*8)); err != nil {
		return fmt.Errorf("fallocate: %w", err)
	}
	shared, err := mapShared(fd, n)
	if err != nil {
		return err
	}
	fill(shared)
	want := floats.Sum(shared)
	anon, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	defer unix.Munmap(anon)
	_ = unix.Madvise(anon, unix.MADV_NOHUGEPAGE) // 4 KiB pages, as the store's
	anonXs := asFloats(anon)
	fill(anonXs)

	var anonT, memfdT, procsT []timing
	for r := range opts.repeat {
		fmt.Fprintf(stderr, "shmfloor: round %d/%d\n", r+1, opts.repeat)
		t, err := threads(func() ([]float64, func(), error) { return anonXs, func() {}, nil }, opts.sums, want)
		if err != nil {
			return fmt.Errorf("anon: %w", err)
		}
		anonT = append(anonT, t)
		t, err = threads(func() ([]float64, func(), error) {
			xs, err := mapShared(fd, n)
			if err == nil && opts.populate {
				err = populate(xs)
			}
			return xs, func() { unmap(xs) }, err
		}, opts.sums, want)
		if err != nil {
			return fmt.Errorf("memfd: %w", err)
		}
		memfdT = append(memfdT, t)
		if t, err = procs(memfd, n, opts.sums, want, opts.populate); err != nil {
			return fmt.Errorf("procs: %w", err)
		}
		procsT = append(procsT, t)
	}
	a, m, p := median(anonT), median(memfdT), median(procsT)
	config := map[string]any{"size_bytes": n * 8, "sums_per_worker": opts.sums, "workers": 2, "repeat": opts.repeat, "populate": opts.populate,
		"page_size": os.Getpagesize(), "gomaxprocs": runtime.GOMAXPROCS(0)}
	records := []benchfmt.Record{
		benchfmt.NewRecord("shmfloor", "memfd_threads_sums_s", m.sums.Seconds(), "s", "anon_threads_sums_s", a.sums.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("shmfloor", "memfd_procs_sums_s", p.sums.Seconds(), "s", "anon_threads_sums_s", a.sums.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("shmfloor", "memfd_procs_vs_threads_sums_s", p.sums.Seconds(), "s", "memfd_threads_sums_s", m.sums.Seconds(), config).WithVerified(true),
		benchfmt.NewRecord("shmfloor", "memfd_procs_first_touch_s", p.first.Seconds(), "s", "memfd_threads_first_touch_s", m.first.Seconds(), config),
	}
	if opts.json {
		return benchfmt.WriteAll(stdout, records)
	}
	fmt.Fprintf(stdout, "steady sums (%d per worker, 2 workers): anon %.3fs  memfd %.3fs (%.3fx)  procs %.3fs (%.3fx anon, %.3fx memfd)\n",
		opts.sums, a.sums.Seconds(), m.sums.Seconds(), m.sums.Seconds()/a.sums.Seconds(),
		p.sums.Seconds(), p.sums.Seconds()/a.sums.Seconds(), p.sums.Seconds()/m.sums.Seconds())
	fmt.Fprintf(stdout, "first pass over a fresh mapping: memfd (one process) %.3fs  procs %.3fs\n", m.first.Seconds(), p.first.Seconds())
	return nil
}

// threads runs two goroutines, each on its own OS thread, over the array
// view returns (called once per worker: a fresh mapping, or the same
// slice), timing a first pass and then sums steady passes from a common
// start.
func threads(view func() ([]float64, func(), error), sums int, want float64) (timing, error) {
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
		return timing{}, err
	}
	return timing{first: max(firsts[0], firsts[1]), sums: latest(ends).Sub(t0)}, nil
}

// procs runs two child processes over the memfd: each maps it, reports
// its first pass ("ready SECONDS"), waits for a line on its stdin, runs
// its steady sums and reports their result ("done SUM").
func procs(memfd *os.File, n, sums int, want float64, prefault bool) (timing, error) {
	type kid struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Scanner
		first time.Duration
	}
	kids := make([]*kid, 2)
	defer func() {
		for _, k := range kids {
			if k != nil && k.cmd.Process != nil {
				_ = k.cmd.Process.Kill()
				_ = k.cmd.Wait()
			}
		}
	}()
	for w := range kids {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(n)+","+strconv.Itoa(sums)+","+strconv.FormatBool(prefault), "GOMAXPROCS=1")
		cmd.ExtraFiles = []*os.File{memfd}
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return timing{}, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return timing{}, err
		}
		if err := cmd.Start(); err != nil {
			return timing{}, err
		}
		kids[w] = &kid{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	}
	for w, k := range kids {
		secs, err := expect(k.out, "ready")
		if err != nil {
			return timing{}, fmt.Errorf("child %d: %w", w, err)
		}
		k.first = time.Duration(secs * float64(time.Second))
	}
	t0 := time.Now()
	for _, k := range kids {
		if _, err := io.WriteString(k.in, "go\n"); err != nil {
			return timing{}, err
		}
	}
	var ends [2]time.Time
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w, k := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := expect(k.out, "done")
			ends[w] = time.Now()
			if err == nil && got != want {
				err = fmt.Errorf("summed %g, want %g", got, want)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("child %d: %w", w, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return timing{}, err
	}
	return timing{first: max(kids[0].first, kids[1].first), sums: latest(ends).Sub(t0)}, nil
}

// child is a summing child process (see procs).
func child(stdin io.Reader, stdout io.Writer) error {
	var n, sums int
	var prefault bool
	if _, err := fmt.Sscanf(os.Getenv(childEnv), "%d,%d,%t", &n, &sums, &prefault); err != nil || n < 1 || sums < 1 {
		return fmt.Errorf("shmfloor child: bad %s=%q", childEnv, os.Getenv(childEnv))
	}
	xs, err := mapShared(3, n)
	if err != nil {
		return err
	}
	if prefault {
		if err := populate(xs); err != nil {
			return err
		}
	}
	t := time.Now()
	got := floats.Sum(xs)
	fmt.Fprintf(stdout, "ready %g\n", time.Since(t).Seconds())
	if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("shmfloor child: waiting for the start: %w", err)
	}
	for range sums {
		got = floats.Sum(xs)
	}
	fmt.Fprintf(stdout, "done %s\n", strconv.FormatFloat(got, 'g', -1, 64))
	return nil
}

// expect reads one line "WORD NUMBER" from s and returns the number.
func expect(s *bufio.Scanner, word string) (float64, error) {
	if !s.Scan() {
		if err := s.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("exited before %q", word)
	}
	w, num, ok := strings.Cut(s.Text(), " ")
	if !ok || w != word {
		return 0, fmt.Errorf("said %q, want %q", s.Text(), word)
	}
	return strconv.ParseFloat(num, 64)
}

func mapShared(fd, n int) ([]float64, error) {
	b, err := unix.Mmap(fd, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap memfd: %w", err)
	}
	return asFloats(b), nil
}

// populate prefaults a mapping for reading (MADV_POPULATE_READ, Linux
// 5.14+).
func populate(xs []float64) error {
	if err := unix.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*8), unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("madvise(MADV_POPULATE_READ): %w", err)
	}
	return nil
}

func unmap(xs []float64) {
	_ = unix.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*8))
}

func asFloats(b []byte) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// fill writes broadcast's deterministic values.
func fill(xs []float64) {
	for i := range xs {
		xs[i] = float64(i & 1023)
	}
}

func latest(ts [2]time.Time) time.Time {
	if ts[0].After(ts[1]) {
		return ts[0]
	}
	return ts[1]
}

// median is the round with the median steady time (and, apart, the
// median first pass).
func median(ts []timing) timing {
	sums := make([]time.Duration, len(ts))
	firsts := make([]time.Duration, len(ts))
	for i, t := range ts {
		sums[i], firsts[i] = t.sums, t.first
	}
	slices.Sort(sums)
	slices.Sort(firsts)
	return timing{first: firsts[len(firsts)/2], sums: sums[len(sums)/2]}
}
