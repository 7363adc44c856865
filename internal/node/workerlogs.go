package node

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Worker output on a cluster node (not a driver's): each worker process's
// stdout and stderr go through pipes to a workerLog, which
//   - appends them to the worker's log file, <session>/logs/worker-<id>.log
//     (`atoll logs WORKER`; at most MaxWorkerLogBytes, the rest is counted
//     and dropped; the last maxWorkerLogs workers' files are kept),
//   - copies them to the node's own output (Config.WorkerOutput, default
//     its stderr), as before the capture, and
//   - publishes their complete lines, batched per write, on
//     OutputSubject(job) for the driver of the job whose task the worker
//     ran when it wrote them, or ran last if it wrote between tasks (its
//     pipes may deliver a task's last lines after its result:
//     raylet.Slot.Current); an actor's process writes for its actor's
//     job. A line longer than MaxOutputLine is cut into several.

const (
	// MaxWorkerLogBytes bounds one worker's log file.
	MaxWorkerLogBytes = 64 << 20
	// maxWorkerLogs bounds the worker log files a node keeps.
	maxWorkerLogs = 1024
	// MaxOutputLine bounds a line of worker output sent to a driver.
	MaxOutputLine = 16 << 10
	// maxOutputBatch bounds the bytes of lines in one WorkerOutput.
	maxOutputBatch = 64 << 10
)

// OutputSubject is where a job's worker output goes: its driver
// subscribes.
func OutputSubject(job ids.JobID) string { return cluster.DefaultPrefix + ".output." + job.String() }

// workerLogs is a node's worker log files.
type workerLogs struct {
	n   *Node
	dir string
	out io.Writer // the node's own output for workers (Config.WorkerOutput)

	mu    sync.Mutex
	logs  map[ids.WorkerID]*workerLog
	order []ids.WorkerID // oldest first, for maxWorkerLogs
}

// workerLog is one worker process's output.
type workerLog struct {
	logs    *workerLogs
	id      ids.WorkerID
	path    string
	current func() *atollpb.TaskSpec
	pid     atomic.Int64
	ended   atomic.Bool

	mu      sync.Mutex // guards what follows; writes come from two pipes
	f       *os.File
	written int64
	dropped int64
	partial [2][]byte // an unfinished line per stream (stdout, stderr)
}

// newWorkerLogs prepares the node's worker log directory.
func newWorkerLogs(n *Node) (*workerLogs, error) {
	dir := filepath.Join(n.sessionDir, "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("worker logs: %w", err)
	}
	out := n.cfg.WorkerOutput
	if out == nil {
		out = os.Stderr
	}
	return &workerLogs{n: n, dir: dir, out: out, logs: map[ids.WorkerID]*workerLog{}}, nil
}

// outputFor is the raylet's ProcessConfig.OutputFor.
func (w *workerLogs) outputFor(id ids.WorkerID, current func() *atollpb.TaskSpec) raylet.ProcessOutput {
	l := &workerLog{logs: w, id: id, current: current, path: filepath.Join(w.dir, "worker-"+id.String()+".log")}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		w.n.log.Warn("worker log: output not kept", "worker", id.String(), "err", err)
	}
	l.f = f
	w.mu.Lock()
	w.logs[id] = l
	w.order = append(w.order, id)
	var drop []*workerLog
	for len(w.order) > maxWorkerLogs {
		if old := w.logs[w.order[0]]; old != nil && old.ended.Load() {
			drop = append(drop, old)
			delete(w.logs, old.id)
		}
		w.order = w.order[1:]
	}
	w.mu.Unlock()
	for _, old := range drop {
		_ = os.Remove(old.path)
	}
	return l
}

// path returns a worker's log file and whether the worker has exited.
func (w *workerLogs) path(id ids.WorkerID) (string, bool, bool) {
	w.mu.Lock()
	l := w.logs[id]
	w.mu.Unlock()
	if l == nil {
		return "", false, false
	}
	return l.path, l.ended.Load(), true
}

// stream is one of a worker's two streams.
type stream struct {
	l      *workerLog
	stderr bool
}

func (s stream) Write(p []byte) (int, error) {
	s.l.write(p, s.stderr)
	return len(p), nil
}

func (l *workerLog) Stdout() io.Writer { return stream{l, false} }
func (l *workerLog) Stderr() io.Writer { return stream{l, true} }
func (l *workerLog) Started(pid int)   { l.pid.Store(int64(pid)) }

func (l *workerLog) Exited() {
	l.mu.Lock()
	lines := [2][]string{}
	for i, p := range l.partial { // an unfinished last line still counts
		if len(p) > 0 {
			lines[i] = []string{strings.ToValidUTF8(string(p), "\uFFFD")}
			l.partial[i] = nil
		}
	}
	if l.f != nil {
		if l.dropped > 0 {
			fmt.Fprintf(l.f, "[atoll: %d more bytes of output dropped: this log holds at most %d]\n", l.dropped, MaxWorkerLogBytes)
		}
		_ = l.f.Close()
		l.f = nil
	}
	l.mu.Unlock()
	l.ended.Store(true)
	l.publish(lines[0], false)
	l.publish(lines[1], true)
}

// write keeps, copies and publishes a piece of one stream.
func (l *workerLog) write(p []byte, stderr bool) {
	l.mu.Lock()
	if l.f != nil {
		keep := min(int64(len(p)), max(MaxWorkerLogBytes-l.written, 0))
		if keep > 0 {
			n, _ := l.f.Write(p[:keep])
			l.written += int64(n)
		}
		l.dropped += int64(len(p)) - keep
	}
	_, _ = l.logs.out.Write(p)
	i := 0
	if stderr {
		i = 1
	}
	buf := append(l.partial[i], p...)
	var lines []string
split:
	for {
		nl := bytes.IndexByte(buf, '\n')
		switch {
		case nl >= 0 && nl <= MaxOutputLine:
			lines = append(lines, strings.ToValidUTF8(string(buf[:nl]), "\uFFFD"))
			buf = buf[nl+1:]
		case len(buf) > MaxOutputLine: // no newline within the bound: cut
			lines = append(lines, strings.ToValidUTF8(string(buf[:MaxOutputLine]), "\uFFFD"))
			buf = buf[MaxOutputLine:]
		default:
			break split
		}
	}
	l.partial[i] = append([]byte(nil), buf...)
	l.mu.Unlock()
	l.publish(lines, stderr)
}

// publish sends lines to the driver of the job the worker runs a task of.
func (l *workerLog) publish(lines []string, stderr bool) {
	if len(lines) == 0 {
		return
	}
	spec := l.current()
	if spec == nil {
		return // before its first task: the node's output and the log file have it
	}
	job, err := ids.FromBytes(spec.JobId)
	if err != nil {
		return
	}
	n := l.logs.n
	for len(lines) > 0 {
		size, k := 0, 0
		for k < len(lines) && (k == 0 || size+len(lines[k]) <= maxOutputBatch) {
			size += len(lines[k])
			k++
		}
		b, err := proto.Marshal(&atollpb.WorkerOutput{JobId: job.Bytes(), WorkerId: l.id.Bytes(), NodeId: n.id.Bytes(),
			Pid: int32(l.pid.Load()), Name: spec.Name, Stderr: stderr, Lines: lines[:k]})
		if err == nil {
			err = n.nc.Publish(OutputSubject(job), b)
		}
		if err != nil {
			n.log.Debug("worker output: not sent to the driver", "worker", l.id.String(), "err", err)
			return
		}
		lines = lines[k:]
	}
}
