package atoll_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/atoll-runtime/atoll"
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
		files, _ := filepath.Glob(filepath.Join(sessions[0], "spill", "*.bin"))
		return len(files) > 0
	})
	return cmd, sessions[0]
}

// TestDriverSignalCleansUp: SIGINT to a driver mid-spill shuts atoll down
// (no spill file, no session directory left) and the process still dies
// of the signal. After a kill -9, which no handler sees, the next Init on
// the machine reaps what the driver left.
func TestDriverSignalCleansUp(t *testing.T) {
	if os.Getenv("ATOLL_TEST_SPILLING_DRIVER") != "" {
		spillingDriver()
	}
	tmp := t.TempDir()
	cmd, session := startSpillingDriver(t, tmp)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
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
