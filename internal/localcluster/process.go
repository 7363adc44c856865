package localcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// FilterEnv drops the variable name from env.
func FilterEnv(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Process is a started node process, reaped by a goroutine.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // how it exited (never nil), once done is closed
}

// StartProcess starts bin with args and env, its stdout and stderr going
// to logFile, and waits up to timeout for it to print the ready line. If
// it exits first or does not print it in time (it is then killed), the
// error holds the end of its log.
func StartProcess(bin string, args, env []string, logFile string, timeout time.Duration) (*Process, nodeconfig.NodeReady, error) {
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nodeconfig.NodeReady{}, err
	}
	rw := &readyWriter{f: f, ready: make(chan nodeconfig.NodeReady, 1)}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = rw // copied by a goroutine of os/exec until the pipe closes
	cmd.Stderr = f
	// Never outlive the program that started it, even if it crashes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Should a worker process hold the node's stdout after the node
	// exits, Wait stops copying after this long.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, nodeconfig.NodeReady{}, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if p.err == nil {
			p.err = errors.New("exit status 0")
		}
		f.Close()
		close(p.done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-rw.ready:
		return p, r, nil
	case <-p.done:
		// The ready line may have raced the exit.
		select {
		case r := <-rw.ready:
			return nil, r, fmt.Errorf("pid %d exited right after it was ready (%v); log %s:\n%s", cmd.Process.Pid, p.err, logFile, Tail(logFile, TailLines))
		default:
		}
		return nil, nodeconfig.NodeReady{}, fmt.Errorf("pid %d exited before it was ready (%v); log %s:\n%s", cmd.Process.Pid, p.err, logFile, Tail(logFile, TailLines))
	case <-timer.C:
		_ = p.Signal(syscall.SIGKILL)
		p.Wait(KillWait)
		return nil, nodeconfig.NodeReady{}, fmt.Errorf("pid %d not ready after %v (killed); log %s:\n%s", cmd.Process.Pid, timeout, logFile, Tail(logFile, TailLines))
	}
}

// Signal sends sig unless the process has been reaped.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Wait waits up to d for the process to be reaped.
func (p *Process) Wait(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// Stop sends SIGTERM, waits up to timeout, then kills the process; it
// returns once the process is reaped.
func (p *Process) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.Wait(timeout) {
		return nil
	}
	_ = p.Signal(syscall.SIGKILL)
	if !p.Wait(KillWait) {
		return fmt.Errorf("pid %d still running after SIGKILL", p.cmd.Process.Pid)
	}
	return fmt.Errorf("pid %d did not exit within %v of SIGTERM; killed", p.cmd.Process.Pid, timeout)
}

// readyWriter copies a node's stdout to its log file and delivers the
// first ready line (nodeconfig.NodeReadyPrefix and JSON) on ready.
type readyWriter struct {
	mu    sync.Mutex
	f     *os.File
	line  []byte // the partial line before a ready line was found
	found bool
	ready chan nodeconfig.NodeReady
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(b); err != nil {
		return 0, err
	}
	if w.found {
		return len(b), nil
	}
	w.line = append(w.line, b...)
	for !w.found {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(w.line[:i], "\r")
		w.line = w.line[i+1:]
		rest, ok := bytes.CutPrefix(line, []byte(nodeconfig.NodeReadyPrefix))
		if !ok {
			continue
		}
		var r nodeconfig.NodeReady
		if err := json.Unmarshal(rest, &r); err != nil {
			fmt.Fprintf(w.f, "localcluster: bad ready line %q: %v\n", line, err)
			continue
		}
		w.found = true
		w.line = nil
		w.ready <- r
	}
	return len(b), nil
}

// Tail returns the last n lines of a file (or why it cannot).
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TailLines is how many lines of a node's log an error about it quotes.
const TailLines = 50

// KillWait bounds the wait for a killed process to be reaped.
const KillWait = 10 * time.Second

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited (an *exec.ExitError, or an error saying
// "exit status 0") once Done is closed; nil before.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// ExitCode is the process's exit status once Done is closed (-1 before,
// or when a signal killed it).
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
