package atoll_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// heldRefs keeps spillingDriver's objects alive.
var heldRefs []atoll.ObjectRef[[]byte]

// spillingDriver is the child process of the signal tests: a driver whose
// store (32 MiB) spilled, waiting to be signalled. It never returns.
func spillingDriver() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(32<<20), atoll.WithWorkerMode(atoll.InProcessWorkers), atoll.WithNumCPUs(1)); err != nil {
		fmt.Println("init:", err)
		os.Exit(2)
	}
	refs := make([]atoll.ObjectRef[[]byte], 16)
	for i := range refs {
		ref, err := atoll.Put(ctx, make([]byte, 4<<20))
		if err != nil {
			fmt.Println("put:", err)
			os.Exit(2)
		}
		refs[i] = ref // all live: the store must spill
	}
	heldRefs = refs
	fmt.Println("ready")
	select {}
}

// startSpillingDriver runs spillingDriver with TMPDIR=tmp and waits until
// its session directory holds spill files.
func startSpillingDriver(t *testing.T, tmp string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDriverSignalCleansUp$")
	cmd.Env = append(os.Environ(), "ATOLL_TEST_SPILLING_DRIVER=1", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("driver: %q", sc.Text())
	}
	sessions, _ := filepath.Glob(filepath.Join(tmp, "atoll-session-*"))
	if len(sessions) != 1 {
		t.Fatalf("sessions in %s: %v", tmp, sessions)
	}
	testutil.Eventually(t, "spill files in the driver's session", func() bool {
		n, _ := openSpillFiles(t, cmd.Process.Pid, filepath.Join(sessions[0], "spill"))
		return n > 0
	})
	return cmd, sessions[0]
}

// openSpillFiles returns how many spill files in dir the process pid
// holds open with no name, and their size: a store keeps its spill files
// that way, so that they go with the process.
func openSpillFiles(t *testing.T, pid int, dir string) (n int, bytes int64) {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0 // the process is gone
	}
	for _, e := range fds {
		fd := fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		name, deleted := strings.CutSuffix(target, " (deleted)")
		if !deleted || filepath.Dir(name) != dir || !strings.HasSuffix(name, ".bin") {
			continue
		}
		if fi, err := os.Stat(fd); err == nil {
			n++
			bytes += fi.Size()
		}
	}
	return n, bytes
}

// du returns the disk space the files under dir take, as du(1) counts
// it, but for the lock files of stores (a pid, no spilled data; the next
// store on the directory reaps them).
func du(dir string) (bytes int64) {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || spill.IsLockFile(path) {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil && !d.IsDir() {
			bytes += st.Blocks * 512
		}
		return nil
	})
	return bytes
}

// diskUsed returns the bytes in use on the file system holding dir.
func diskUsed(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return (st.Blocks - st.Bfree) * uint64(st.Bsize)
}

// TestKilledDriverLeavesNoSpillBytes: kill -9 of a driver that spilled
// leaves no spill bytes on disk, with no later Init to reap them: the
// files had no name, and the kernel freed them with the process. As root
// the driver's TMPDIR is a file system of its own, so the test also sees
// its space come back.
func TestKilledDriverLeavesNoSpillBytes(t *testing.T) {
	tmp := t.TempDir()
	if os.Geteuid() == 0 {
		tmp = testutil.SmallDisk(t, 512<<20)
	}
	before := diskUsed(t, tmp)
	cmd, session := startSpillingDriver(t, tmp)
	spillDir := filepath.Join(session, "spill")
	n, spilled := openSpillFiles(t, cmd.Process.Pid, spillDir)
	used := diskUsed(t, tmp)
	t.Logf("driver holds %d spill files of %d MiB; %d MiB used on its TMPDIR's file system", n, spilled>>20, (used-before)>>20)
	if spilled < 16<<20 {
		t.Fatalf("the driver spilled %d bytes, want at least 16 MiB", spilled)
	}
	if os.Geteuid() == 0 && used-before < uint64(spilled) {
		t.Fatalf("%d bytes in use for %d bytes of spill files", used-before, spilled)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testutil.EventuallyWithin(t, 5*time.Second, "no spill bytes on disk", func() bool {
		return du(spillDir) == 0 && (os.Geteuid() != 0 || diskUsed(t, tmp)-before < 1<<20)
	})
}

// TestDriverSignalCleansUp: SIGINT to a driver mid-spill shuts atoll down
// (no spill file, no session directory left) and the process still dies
// of the signal. After a kill -9, which no handler sees, the next Init on
// the machine reaps what the driver left.
func TestDriverSignalCleansUp(t *testing.T) {
	if os.Getenv("ATOLL_TEST_SPILLING_DRIVER") != "" {
		spillingDriver()
	}
	sigintDefaultInChildren(t)
	tmp := t.TempDir()
	cmd, session := startSpillingDriver(t, tmp)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// A driver that outlives the signal fails the test, not hangs it.
	stuck := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	stuck.Stop()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Fatalf("driver after SIGINT: %v (%v), want killed by SIGINT", err, cmd.ProcessState)
	}
	if _, err := os.Stat(session); !os.IsNotExist(err) {
		t.Fatalf("SIGINT left the session directory %s: %v", session, err)
	}

	cmd, session = startSpillingDriver(t, tmp)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := os.Stat(session); err != nil {
		t.Fatalf("after kill -9 the session directory is gone already: %v", err)
	}
	t.Setenv("TMPDIR", tmp)
	start(t)
	if _, err := os.Stat(session); !os.IsNotExist(err) {
		t.Fatalf("the next Init did not reap %s: %v", session, err)
	}
}

// sigintDefaultInChildren makes the processes the test starts begin with
// SIGINT's default action even when the test itself began with it
// ignored (go test run in the background of a shell that has no job
// control): a process keeps an ignored signal ignored across exec, and
// a driver whose SIGINT is ignored rightly outlives it. A signal this
// process handles is reset to its default action by exec, so the test
// handles SIGINT (as it ignored it: nothing happens) while it runs.
func sigintDefaultInChildren(t *testing.T) {
	if !sigintIgnoredAtStart {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	t.Cleanup(func() { signal.Stop(c) })
}

// sigintIgnoredAtStart is read before any Notify: after one, and a Stop
// that ignores SIGINT again, signal.Ignored no longer says so.
var sigintIgnoredAtStart = signal.Ignored(os.Interrupt)
