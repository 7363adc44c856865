package remote

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

// The attacker of BenchmarkPullUnderAttackPinned runs in a process of its
// own: this test binary started again with these variables set.
const (
	envAttackAddr = "ATOLL_TEST_ATTACK_ADDR"
	envAttackCPU  = "ATOLL_TEST_ATTACK_CPU"
)

// pinThreads sets the CPU affinity of every thread of this process to cpu
// and returns a function that restores each thread's former mask. Threads
// the Go runtime starts later inherit the mask of the thread that starts
// them, so the whole process stays on cpu.
func pinThreads(tb testing.TB, cpu int) (restore func()) {
	tb.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		tb.Skipf("cannot list this process's threads: %v", err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	old := map[int]unix.CPUSet{}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var was unix.CPUSet
		if unix.SchedGetaffinity(tid, &was) != nil {
			continue // the thread ended
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			continue
		}
		old[tid] = was
	}
	return func() {
		for tid, was := range old {
			_ = unix.SchedSetaffinity(tid, &was)
		}
	}
}

// TestAttackerProcess is the attacker of BenchmarkPullUnderAttackPinned,
// run only in the child it starts: 300 silent connections to the address
// in envAttackAddr, reopened as the server closes them, from a process
// pinned to the CPU in envAttackCPU, until its standard input closes.
func TestAttackerProcess(t *testing.T) {
	addr := os.Getenv(envAttackAddr)
	if addr == "" {
		t.Skip("the attacker of BenchmarkPullUnderAttackPinned; runs only in its child process")
	}
	cpu, err := strconv.Atoi(os.Getenv(envAttackCPU))
	if err != nil {
		t.Fatal(err)
	}
	defer pinThreads(t, cpu)()
	stop := silentAttack(t, addr, 300)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
}

// BenchmarkPullUnderAttackPinned is BenchmarkPullUnderAttack with the
// attacker's CPU out of the picture: client and server run on CPU 0, the
// attacker in a process of its own on CPU 1, as an attacker on another
// machine would be (its connections still reach the server through the
// kernel). The baseline is the same pulls, on CPU 0, before the attack;
// x-unloaded is the security audit's bound (2x).
func BenchmarkPullUnderAttackPinned(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs two CPUs: one for the attacker, one for client and server")
	}
	defer pinThreads(b, 0)()
	src := newMemSource()
	id := objID(1)
	src.add(id, pattern(256<<10, 7))
	srv, err := ListenWith("127.0.0.1:0", src, ServerOptions{Key: keyOf(1)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	pulls := func(n int) (pooled, dialed []time.Duration, failed int) { return timedPulls(b, srv, id, n) }
	unloaded, unloadedDialed, _ := pulls(200)

	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestAttackerProcess$", "-test.count=1")
	cmd.Dir = filepath.Dir(self)
	cmd.Env = append(os.Environ(), envAttackAddr+"="+srv.Addr(), envAttackCPU+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	testutil.EventuallyWithin(b, 30*time.Second, "the attacker to fill the pending slots", func() bool { return srv.Refused() > 300 })

	refused0, start := srv.Refused(), time.Now()
	b.ResetTimer()
	var loaded, loadedDialed []time.Duration
	failed := 0
	for b.Loop() {
		p, d, f := pulls(10)
		loaded, loadedDialed, failed = append(loaded, p...), append(loadedDialed, d...), failed+f
	}
	b.StopTimer()
	rate := float64(srv.Refused()-refused0) / time.Since(start).Seconds()
	u, l := median(unloaded), median(loaded)
	b.ReportMetric(rate, "attack-conns/s")
	b.ReportMetric(float64(u.Microseconds()), "unloaded-µs/pull")
	b.ReportMetric(float64(l.Microseconds()), "attacked-µs/pull")
	b.ReportMetric(float64(l)/float64(u), "x-unloaded")
	b.ReportMetric(float64(quantile(loaded, 0.9))/float64(u), "x-unloaded-p90")
	b.ReportMetric(float64(quantile(loaded, 0.99))/float64(u), "x-unloaded-p99")
	b.ReportMetric(float64(quantile(unloaded, 0.99))/float64(u), "unloaded-p99/p50")
	b.ReportMetric(float64(median(unloadedDialed).Microseconds()), "unloaded-dial-µs/pull")
	b.ReportMetric(float64(median(loadedDialed).Microseconds()), "attacked-dial-µs/pull")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(float64(failed+len(loaded)+len(loadedDialed)), "pulls")
}

// quantile is the q-quantile of ds (0 for none).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
