package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// sh runs a shell script as a stand-in node process.
func sh(t *testing.T, script string, timeout time.Duration) (*Process, nodeconfig.NodeReady, string, error) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "node.log")
	p, r, err := StartProcess("/bin/sh", []string{"-c", script}, os.Environ(), log, timeout)
	if p != nil {
		t.Cleanup(func() { _ = p.Stop(KillWait) })
	}
	return p, r, log, err
}

func TestStartProcessReady(t *testing.T) {
	p, r, log, err := sh(t, `echo starting; echo oops >&2; echo 'ATOLL_NODE_READY {"node_id":"ab12","address":"127.0.0.1:4222","pid":7}'; echo after; exec sleep 60`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.NodeID != "ab12" || r.Address != "127.0.0.1:4222" || r.PID != 7 {
		t.Errorf("ready %+v", r)
	}
	// Output after the ready line goes to the log too.
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for data, _ := os.ReadFile(log); !strings.Contains(string(data), "after\n"); data, _ = os.ReadFile(log) {
		select {
		case <-deadline.C:
			t.Fatalf("log lacks the line after the ready line:\n%s", data)
		case <-tick.C:
		}
	}
	if err := p.Stop(KillWait); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	default:
		t.Fatal("stop returned before the process was reaped")
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"starting\n", "oops\n", "ATOLL_NODE_READY ", "after\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log lacks %q:\n%s", want, data)
		}
	}
}

func TestStartProcessExits(t *testing.T) {
	_, _, _, err := sh(t, `echo 'ATOLL_NODE_READY {bad json'; echo "cannot start: boom" >&2; exit 3`, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready (exit status 3)") ||
		!strings.Contains(err.Error(), "cannot start: boom") || !strings.Contains(err.Error(), "bad ready line") {
		t.Fatalf("error %v", err)
	}
}

func TestStartProcessTimeout(t *testing.T) {
	start := time.Now()
	_, _, _, err := sh(t, `echo waiting; exec sleep 60`, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not ready after 200ms (killed)") || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
}

// A process that ignores SIGTERM is killed after the timeout.
func TestStopKills(t *testing.T) {
	p, _, _, err := sh(t, `trap '' TERM; echo 'ATOLL_NODE_READY {"node_id":"ab"}'; while :; do sleep 1; done`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop: %v", err)
	}
	if p.Signal(syscall.SIGKILL) != nil {
		t.Error("signal after reaping should do nothing")
	}
}

func TestReadyWriterSplitWrites(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &readyWriter{f: f, ready: make(chan nodeconfig.NodeReady, 1)}
	line := "noise\nATOLL_NODE_READY {\"node_id\":\"cd\",\"address\":\"h:1\",\"pid\":3}\r\nmore\n"
	for i := range len(line) {
		if _, err := w.Write([]byte(line[i : i+1])); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-w.ready:
		if r.NodeID != "cd" || r.Address != "h:1" || r.PID != 3 {
			t.Errorf("ready %+v", r)
		}
	default:
		t.Fatal("no ready line found")
	}
}
