package atoll_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/atoll-runtime/atoll"
)

var busyIncr = atoll.NewFunc1("signals.incr", func(_ context.Context, x int) (int, error) { return x + 1, nil })

// busyDriver is the child process of TestBusyDriverDiesOfSignal: a driver
// calling Remote and Get in a loop, which reacts to an error as most
// programs do (print it, exit 1). It never returns.
func busyDriver() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithWorkerMode(atoll.InProcessWorkers), atoll.WithNumCPUs(1)); err != nil {
		fmt.Println("init:", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		v, err := atoll.Get(ctx, busyIncr.Remote(ctx, atoll.Value(i)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "busy driver:", err)
			os.Exit(1)
		}
		if i == 0 {
			fmt.Println("ready", v)
		}
	}
}

// TestBusyDriverDiesOfSignal: SIGINT to a driver in the middle of its
// calls ends the process by the signal, as it would without atoll; the
// calls that fail while atoll shuts down do not get to exit it first with
// the program's own status.
func TestBusyDriverDiesOfSignal(t *testing.T) {
	if os.Getenv("ATOLL_TEST_BUSY_DRIVER") != "" {
		busyDriver()
	}
	sigintDefaultInChildren(t)
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBusyDriverDiesOfSignal$")
		cmd.Env = append(os.Environ(), "ATOLL_TEST_BUSY_DRIVER=1", "TMPDIR="+t.TempDir())
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
		if !sc.Scan() || sc.Text() != "ready 1" {
			t.Fatalf("driver: %q", sc.Text())
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Fatalf("round %d: busy driver after SIGINT: %v (%v), want killed by SIGINT", round, err, cmd.ProcessState)
		}
	}
}
