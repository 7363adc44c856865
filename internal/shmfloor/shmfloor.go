// Package shmfloor measures what reading memory shared between processes
// costs with no atoll at all: worker processes (this program, started
// again) each map one memfd holding a []float64 and sum it with gonum's
// floats.Sum, broadcast's task. It is the floor under broadcast's process
// mode; samples/shmfloor reports it alone, samples/broadcast beside its
// own figures.
//
// A program that uses Procs must call RunChild first thing in main (and
// in TestMain) when IsChild reports true: the workers are that program,
// started again with ChildEnv set.
package shmfloor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/floats"
)

// ChildEnv, set in a worker's environment, makes the program a summing
// worker: it maps the memfd it inherits as fd 3.
const ChildEnv = "SHMFLOOR_CHILD"

// IsChild reports whether this process is a summing worker of Procs.
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

// RunChild runs this process as a summing worker and exits.
func RunChild() {
	if err := child(os.Stdin, os.Stdout); err != nil {
		log.Fatal(err)
	}
	os.Exit(0)
}

// Timing is one measured run.
type Timing struct {
	// First is the slowest worker's first pass over its fresh mapping
	// (faults, and on some hypervisors the host's shadow page tables).
	First time.Duration
	// Sums is the steady passes after it, from a common start to the
	// last worker's end.
	Sums time.Duration
}

// Total is the first pass and the steady sums.
func (t Timing) Total() time.Duration { return t.First + t.Sums }

// Fill writes broadcast's deterministic values.
func Fill(xs []float64) {
	for i := range xs {
		xs[i] = float64(i & 1023)
	}
}

// Memfd is n float64s in a memfd, filled by Fill.
type Memfd struct {
	file *os.File
	n    int
	// Want is the sum of the values.
	Want float64
}

// NewMemfd makes and fills a memfd of n float64s (on 4 KiB pages, as the
// object store's shared memory is unless huge pages are allowed).
func NewMemfd(n int) (*Memfd, error) {
	if n < 1 {
		return nil, fmt.Errorf("shmfloor: %d values", n)
	}
	fd, err := unix.MemfdCreate("shmfloor", 0)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	m := &Memfd{file: os.NewFile(uintptr(fd), "shmfloor"), n: n}
	if err := unix.Fallocate(fd, 0, 0, int64(n*8)); err != nil {
		m.file.Close()
		return nil, fmt.Errorf("fallocate: %w", err)
	}
	xs, err := m.Map()
	if err != nil {
		m.file.Close()
		return nil, err
	}
	Fill(xs)
	m.Want = floats.Sum(xs)
	Unmap(xs)
	return m, nil
}

// Len is the number of values.
func (m *Memfd) Len() int { return m.n }

// Map maps the memfd afresh (MAP_SHARED); Unmap undoes it.
func (m *Memfd) Map() ([]float64, error) { return mapShared(int(m.file.Fd()), m.n) }

// Close closes the memfd; its memory goes once nothing maps it.
func (m *Memfd) Close() error { return m.file.Close() }

// Procs runs workers child processes over the memfd: each maps it, makes
// its first pass (timed apart), waits for the common start, makes sums
// more passes and reports its sum, which is checked. prefault populates
// each fresh mapping (MADV_POPULATE_READ) before the first pass.
func (m *Memfd) Procs(workers, sums int, prefault bool) (Timing, error) {
	type kid struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Scanner
		first time.Duration
	}
	if workers < 1 || sums < 0 {
		return Timing{}, fmt.Errorf("shmfloor: %d workers, %d sums", workers, sums)
	}
	kids := make([]*kid, workers)
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
		cmd.Env = append(os.Environ(), ChildEnv+"="+strconv.Itoa(m.n)+","+strconv.Itoa(sums)+","+strconv.FormatBool(prefault), "GOMAXPROCS=1")
		cmd.ExtraFiles = []*os.File{m.file}
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return Timing{}, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return Timing{}, err
		}
		if err := cmd.Start(); err != nil {
			return Timing{}, err
		}
		kids[w] = &kid{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	}
	for w, k := range kids {
		secs, err := expect(k.out, "ready")
		if err != nil {
			return Timing{}, fmt.Errorf("child %d: %w", w, err)
		}
		k.first = time.Duration(secs * float64(time.Second))
	}
	t0 := time.Now()
	for _, k := range kids {
		if _, err := io.WriteString(k.in, "go\n"); err != nil {
			return Timing{}, err
		}
	}
	ends := make([]time.Time, workers)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w, k := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := expect(k.out, "done")
			ends[w] = time.Now()
			if err == nil && got != m.Want {
				err = fmt.Errorf("summed %g, want %g", got, m.Want)
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
		return Timing{}, err
	}
	var t Timing
	for w, k := range kids {
		t.First = max(t.First, k.first)
		t.Sums = max(t.Sums, ends[w].Sub(t0))
	}
	return t, nil
}

// child is a summing worker (see Procs).
func child(stdin io.Reader, stdout io.Writer) error {
	var n, sums int
	var prefault bool
	if _, err := fmt.Sscanf(os.Getenv(ChildEnv), "%d,%d,%t", &n, &sums, &prefault); err != nil || n < 1 || sums < 0 {
		return fmt.Errorf("shmfloor child: bad %s=%q", ChildEnv, os.Getenv(ChildEnv))
	}
	xs, err := mapShared(3, n)
	if err != nil {
		return err
	}
	if prefault {
		if err := Populate(xs); err != nil {
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
	return AsFloats(b), nil
}

// Populate prefaults a mapping for reading (MADV_POPULATE_READ, Linux
// 5.14+).
func Populate(xs []float64) error {
	if err := unix.Madvise(asBytes(xs), unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("madvise(MADV_POPULATE_READ): %w", err)
	}
	return nil
}

// Unmap unmaps what Map (or AsFloats of an mmap) returned.
func Unmap(xs []float64) { _ = unix.Munmap(asBytes(xs)) }

// AsFloats views b as float64s.
func AsFloats(b []byte) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}

func asBytes(xs []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*8)
}

// Median is the median First and, apart, the median Sums of ts.
func Median(ts []Timing) Timing {
	sums := make([]time.Duration, len(ts))
	firsts := make([]time.Duration, len(ts))
	for i, t := range ts {
		sums[i], firsts[i] = t.Sums, t.First
	}
	slices.Sort(sums)
	slices.Sort(firsts)
	return Timing{First: firsts[len(firsts)/2], Sums: sums[len(sums)/2]}
}
