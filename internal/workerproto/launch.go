package workerproto

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// incarnation is one run of a worker and its connection: a process
// started from the worker binary over a socket pair, or a worker runtime
// on goroutines of this process over an in-memory pipe
// (raylet.ProcessConfig.InProcess).
type incarnation struct {
	conn  *workerconn.Conn
	hello chan *atollpb.WorkerHello
	// cmd is the process (nil for an in-process worker); ended is closed
	// once it was reaped and its end reported.
	cmd   *exec.Cmd
	ended chan struct{}
}

// procFrame is a frame from a worker, delivered to the actor that owns
// it; gen tells frames of an old incarnation apart.
type procFrame struct {
	gen   uint64
	frame *atollpb.Frame
}

// processExited reports that a worker ended: its process exited, or its
// in-process connection closed.
type processExited struct {
	gen       uint64
	err       error
	inProcess bool
}

// helloResult reports whether a started worker registered.
type helloResult struct {
	gen uint64
	err error
}

// launch starts incarnation gen of worker id and delivers its frames and
// its end to self; task results go to onResult instead, on the
// connection's reader goroutine, if it is set, and burstEnd (if set) is
// called there after the last frame of each burst read. The proxy serves
// the worker's own requests on that goroutine too. The incarnation is in
// lv from its start to its end.
func launch(system *actor.ActorSystem, self *actor.PID, gen uint64, cfg *raylet.ProcessConfig, px *proxy, lv *live, id ids.WorkerID, node ids.NodeID,
	onResult func(*atollpb.TaskResult), burstEnd func(), current func() *atollpb.TaskSpec) (*incarnation, error) {
	p := &incarnation{hello: make(chan *atollpb.WorkerHello, 1)}
	// Frames are handled once p is complete (onResult may kill it).
	ready := make(chan struct{})
	defer close(ready)
	handler := func(f *atollpb.Frame) {
		<-ready
		if h := f.GetHello(); h != nil {
			select {
			case p.hello <- h:
			default: // a second hello: ignored
			}
			return
		}
		if px.handle(system, self, p.conn, f) {
			return
		}
		if res := f.GetTaskResult(); res != nil && onResult != nil {
			onResult(res)
			return
		}
		system.Root.Send(self, &procFrame{gen: gen, frame: f})
	}
	var opts []workerconn.Option
	if burstEnd != nil {
		opts = append(opts, workerconn.WithBurstEnd(func() { <-ready; burstEnd() }))
	}
	if cfg.InProcess != nil {
		near, far := workerconn.Pipe()
		p.conn = workerconn.Open(near, handler, opts...)
		if err := cfg.InProcess(id, node, far); err != nil {
			p.conn.Close()
			return nil, fmt.Errorf("raylet: start in-process worker: %w", err)
		}
		lv.add(p)
		go func() {
			// The worker is gone when its connection ends: it closed it
			// (it exited), or this side did (it was stopped or killed).
			// Everything it wrote before is read by then.
			<-p.conn.Done()
			lv.remove(p)
			system.Root.Send(self, &processExited{gen: gen, err: p.conn.Err(), inProcess: true})
		}()
		return p, nil
	}
	return p, p.startProcess(system, self, gen, cfg, lv, id, node, handler, opts, current)
}

// startProcess starts the worker binary with its end of a socket pair.
func (p *incarnation) startProcess(system *actor.ActorSystem, self *actor.PID, gen uint64, cfg *raylet.ProcessConfig, lv *live, id ids.WorkerID, node ids.NodeID,
	handler workerconn.Handler, opts []workerconn.Option, current func() *atollpb.TaskSpec) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("raylet: socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "raylet-conn"), os.NewFile(uintptr(fds[1]), "worker-conn")
	defer theirs.Close()
	nc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return fmt.Errorf("raylet: worker socket: %w", err)
	}
	p.conn = workerconn.Open(workerconn.Socket(nc), handler, opts...)
	cmd := exec.Command(cfg.Binary, cfg.Args...)
	// No credentials: a worker talks to its node only, over its socket.
	cmd.Env = append(append(nodeconfig.WithoutCredentials(os.Environ()), cfg.Env...),
		raylet.EnvWorker+"=1", raylet.EnvWorkerID+"="+id.String(), raylet.EnvNodeID+"="+node.String(),
		raylet.EnvArenaSize+"="+strconv.FormatUint(cfg.ArenaSize, 10))
	cmd.ExtraFiles = []*os.File{cfg.Arena, theirs} // fds 3 and 4
	cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
	var out raylet.ProcessOutput
	if cfg.OutputFor != nil {
		out = cfg.OutputFor(id, current)
		cmd.Stdout, cmd.Stderr = out.Stdout(), out.Stderr()
	}
	// A worker never outlives its raylet.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.conn.Close()
		return fmt.Errorf("raylet: start worker %s: %w", cfg.Binary, err)
	}
	p.cmd, p.ended = cmd, make(chan struct{})
	lv.add(p)
	if out != nil {
		out.Started(cmd.Process.Pid)
	}
	go func() {
		defer close(p.ended)
		err := cmd.Wait()
		if out != nil {
			out.Exited()
		}
		// Read what the process wrote before it ended (results of calls
		// it finished) before the connection closes: the reader ends at
		// the end of the stream.
		select {
		case <-p.conn.Done():
		case <-time.After(drainTimeout):
		}
		p.conn.Close()
		lv.remove(p)
		system.Root.Send(self, &processExited{gen: gen, err: err})
	}()
	return nil
}

// drainTimeout bounds the wait for a dead process's last frames.
const drainTimeout = 2 * time.Second

// waitHello waits for the worker's first frame.
func (p *incarnation) waitHello(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.hello:
		return nil
	case <-p.conn.Done():
		return fmt.Errorf("raylet: worker exited before it registered: %v", p.conn.Err())
	case <-t.C:
		return fmt.Errorf("raylet: worker did not register within %v", timeout)
	}
}

// awaitHello waits for the hello on a goroutine of its own and posts the
// outcome to self.
func (p *incarnation) awaitHello(system *actor.ActorSystem, self *actor.PID, gen uint64, timeout time.Duration) {
	go func() { system.Root.Send(self, &helloResult{gen: gen, err: p.waitHello(timeout)}) }()
}

// gone is closed when the incarnation ended: its process was reaped, or
// its in-process connection closed.
func (p *incarnation) gone() <-chan struct{} {
	if p.ended != nil {
		return p.ended
	}
	return p.conn.Done()
}

// kill ends the worker at once: a process is sent SIGKILL; an in-process
// worker's connection is closed (its tasks' contexts are cancelled, and
// whatever its goroutines still do is dropped). Its end is reported as
// usual.
func (p *incarnation) kill() {
	switch {
	case p == nil:
	case p.cmd != nil:
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	case p.conn != nil:
		p.conn.Close()
	}
}

// ExitGrace is how long a worker whose actor stops (the node stops, an
// idle worker is reaped, an actor is killed) gets to exit on its own
// before it is killed: it exports the spans it still holds first. A crash
// restart or a kill-worker fault kills at once.
const ExitGrace = 3 * time.Second

// stop asks the worker to exit (a WorkerExit frame) and kills it if it
// has not within ExitGrace, or if the frame cannot be sent.
func (p *incarnation) stop() {
	if p == nil || p.conn == nil {
		return
	}
	if p.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{}}}) == nil {
		t := time.NewTimer(ExitGrace)
		select {
		case <-p.conn.Done():
		case <-t.C:
		}
		t.Stop()
	}
	p.kill()
	if p.ended != nil {
		// Reaped before the node's shutdown returns: no process, and no
		// goroutine waiting on one, outlives it.
		t := time.NewTimer(drainTimeout + time.Second)
		select {
		case <-p.ended:
		case <-t.C:
		}
		t.Stop()
	}
}

func exitReason(m *processExited) string {
	switch {
	case m.inProcess:
		return "in-process worker ended (its connection closed)"
	case m.err == nil:
		return "worker process exited"
	}
	return "worker process died: " + m.err.Error()
}
