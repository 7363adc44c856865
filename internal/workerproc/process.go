package workerproc

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
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// workerProcess is one started worker process and its connection.
type workerProcess struct {
	cmd   *exec.Cmd
	conn  *workerconn.Conn
	hello chan *atollpb.WorkerHello
}

// procFrame is a frame from a worker process, delivered to the actor that
// owns the process; gen tells frames of an old incarnation apart.
type procFrame struct {
	gen   uint64
	frame *atollpb.Frame
}

// processExited reports that a worker process ended.
type processExited struct {
	gen uint64
	err error
}

// startProcess starts a worker process for id and delivers its frames
// and its exit to self; task results go to onResult instead, on the
// connection's reader goroutine, if it is set.
func startProcess(system *actor.ActorSystem, self *actor.PID, gen uint64, cfg *raylet.ProcessConfig, px *proxy, id ids.WorkerID, node ids.NodeID,
	onResult func(*atollpb.TaskResult), current func() *atollpb.TaskSpec) (*workerProcess, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("raylet: socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "raylet-conn"), os.NewFile(uintptr(fds[1]), "worker-conn")
	defer theirs.Close()
	nc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("raylet: worker socket: %w", err)
	}
	p := &workerProcess{hello: make(chan *atollpb.WorkerHello, 1)}
	// Frames are handled once the process is started and p complete
	// (onResult may kill it).
	ready := make(chan struct{})
	defer close(ready)
	p.conn = workerconn.New(nc, func(f *atollpb.Frame) {
		<-ready
		if h := f.GetHello(); h != nil {
			p.hello <- h
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
	})
	cmd := exec.Command(cfg.Binary, cfg.Args...)
	cmd.Env = append(append(os.Environ(), cfg.Env...),
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
		return nil, fmt.Errorf("raylet: start worker %s: %w", cfg.Binary, err)
	}
	p.cmd = cmd
	if out != nil {
		out.Started(cmd.Process.Pid)
	}
	go func() {
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
		system.Root.Send(self, &processExited{gen: gen, err: err})
	}()
	return p, nil
}

// drainTimeout bounds the wait for a dead process's last frames.
const drainTimeout = 2 * time.Second

// waitHello waits for the worker's first frame.
func (p *workerProcess) waitHello(timeout time.Duration) error {
	select {
	case <-p.hello:
		return nil
	case <-p.conn.Done():
		return fmt.Errorf("raylet: worker exited before it registered: %v", p.conn.Err())
	case <-time.After(timeout):
		return fmt.Errorf("raylet: worker did not register within %v", timeout)
	}
}

// kill ends the process at once (SIGKILL); its exit is reported as usual.
func (p *workerProcess) kill() {
	if p != nil && p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

func exitReason(err error) string {
	if err == nil {
		return "worker process exited"
	}
	return "worker process died: " + err.Error()
}
