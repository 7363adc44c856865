//go:build linux

package pss

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m)
}

const mib = 1 << 20

func TestReadSelf(t *testing.T) {
	n, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("PSS of the test process is 0")
	}
}

func TestReadMissingProcess(t *testing.T) {
	_, err := Read(1 << 30) // above pid_max
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want os.ErrNotExist", err)
	}
}

// touch maps size bytes of private anonymous memory and has the kernel
// fault every page in for writing (MAP_POPULATE), so the pages are resident
// and private. Touching them from Go instead would also touch the race
// detector's shadow memory under -race and double the growth.
func touch(t *testing.T, size int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

func TestReadSeesAllocation(t *testing.T) {
	runtime.GC()
	before, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	b := touch(t, 64*mib)
	after, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	grew := int64(after) - int64(before)
	if grew < 56*mib || grew > 80*mib {
		t.Fatalf("PSS grew by %.1f MiB after touching 64 MiB", float64(grew)/mib)
	}
}

func TestParseRollup(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rollup
		ok   bool
	}{
		{"Rss:  1740 kB\nPss:  473 kB\nPss_Dirty: 112 kB\n", Rollup{Pss: 473 * 1024}, true},
		{"Pss:  473 kB\nPss_Anon: 112 kB\nPss_Shmem:  64 kB\nAnonymous: 100 kB\nAnonHugePages: 0 kB\n",
			Rollup{Pss: 473 * 1024, PssShmem: 64 * 1024, Anonymous: 100 * 1024}, true},
		{"Rss: 1 kB\n", Rollup{}, false},
		{"Pss: x kB\n", Rollup{}, false},
		{"Pss: 12 MB\n", Rollup{}, false},
		{"Pss: 1 kB\nAnonymous: 2\n", Rollup{}, false},
	} {
		got, err := parseRollup([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseRollup(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// TestRollupAnonymous: private memory the process touches is anonymous;
// a shared memory object it maps and touches is not, and is shmem.
func TestRollupAnonymous(t *testing.T) {
	before, err := ReadRollup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	b := touch(t, 32*mib)
	mid, err := ReadRollup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.MemfdCreate("pss-test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 32*mib); err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(fd, 0, 32*mib, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	after, err := ReadRollup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	if grew := int64(mid.Anonymous) - int64(before.Anonymous); grew < 28*mib || grew > 40*mib {
		t.Errorf("anonymous memory grew by %.1f MiB after touching 32 MiB of it", float64(grew)/mib)
	}
	if grew := int64(after.Anonymous) - int64(mid.Anonymous); grew > 4*mib {
		t.Errorf("anonymous memory grew by %.1f MiB after mapping 32 MiB of shared memory", float64(grew)/mib)
	}
	if grew := int64(after.PssShmem) - int64(mid.PssShmem); grew < 28*mib || grew > 36*mib {
		t.Errorf("Pss_Shmem grew by %.1f MiB after mapping 32 MiB of shared memory", float64(grew)/mib)
	}
}

// startChild starts a child process that lives until the test ends.
func startChild(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

func TestTreeIncludesChild(t *testing.T) {
	child := startChild(t)
	pids, err := Tree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if pids[0] != os.Getpid() {
		t.Fatalf("Tree starts with %d, want the root %d", pids[0], os.Getpid())
	}
	if !slices.Contains(pids, child) {
		t.Fatalf("child %d missing from %v", child, pids)
	}
	total, err := Sum(pids)
	if err != nil || total == 0 {
		t.Fatalf("Sum = %d, %v", total, err)
	}
}

func TestTreeMissingRoot(t *testing.T) {
	if _, err := Tree(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want os.ErrNotExist", err)
	}
}

func TestSamplerPeak(t *testing.T) {
	self := func() []int { return []int{os.Getpid()} }
	runtime.GC()
	base, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	s := NewSampler(time.Millisecond, self)
	s.Start()
	s.Start() // no second goroutine
	b := touch(t, 32*mib)
	// Wait until a periodic sample has seen the allocation.
	deadline := time.Now().Add(10 * time.Second)
	for s.Peak() < base+24*mib {
		if time.Now().After(deadline) {
			t.Fatalf("peak %d never reached base %d + 24 MiB", s.Peak(), base)
		}
		runtime.Gosched()
	}
	runtime.KeepAlive(b)
	peak := s.Stop()
	if peak < base+24*mib {
		t.Fatalf("peak %d < base %d + 24 MiB", peak, base)
	}
	if s.Stop() != peak {
		t.Fatal("second Stop changed the peak")
	}
	if s.Samples() < 2 || s.Err() != nil {
		t.Fatalf("samples %d, err %v", s.Samples(), s.Err())
	}
}

func TestSamplerSkipsExitedProcesses(t *testing.T) {
	s := NewSampler(time.Hour, func() []int { return []int{os.Getpid(), 1 << 30} })
	s.Start()
	if peak := s.Stop(); peak == 0 || s.Err() != nil {
		t.Fatalf("peak %d, err %v", peak, s.Err())
	}
}
