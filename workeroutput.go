package atoll

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/node"
)

// EnvLogToDriver set to "0" keeps a driver from printing its tasks'
// output (as WithoutLogToDriver).
const EnvLogToDriver = "ATOLL_LOG_TO_DRIVER"

// WithoutLogToDriver keeps a driver in a cluster from printing what its
// tasks and actors write to stdout and stderr on the cluster's nodes. By
// default each line arrives prefixed with the task (or actor type), the
// worker's process id and its node, as Ray does:
//
//	(square pid=4242, node=1a2b3c4d) computing 7
//
// on the driver's stdout or stderr as the worker wrote it (to
// WithWorkerOutput's writer if given). The nodes keep every worker's
// output anyway (`atoll logs`).
func WithoutLogToDriver() Option { return func(c *config) { c.noLogToDriver = true } }

// Bounds on what a driver accepts as worker output (nodes send at most
// node.MaxOutputLine per line).
const (
	maxOutputLines = 4096
	maxOutputName  = 256
	// outputPending bounds the messages (and bytes) waiting to be printed.
	outputPendingMsgs  = 1024
	outputPendingBytes = 16 << 20
)

// streamWorkerOutput prints the job's worker output that the cluster's
// nodes publish (node/workerlogs.go), unless turned off. An embedded
// node's workers write to this process's stderr directly.
func (rt *core) streamWorkerOutput(n *node.Node) {
	if !logToDriver(rt.cfg) || n.Gateway() == nil {
		return
	}
	stdout, stderr := io.Writer(os.Stdout), io.Writer(os.Stderr)
	if rt.cfg.node.WorkerOutput != nil {
		stdout, stderr = rt.cfg.node.WorkerOutput, rt.cfg.node.WorkerOutput
	}
	var mu sync.Mutex // one line at a time
	log := rt.log
	sub, err := n.Conn().Subscribe(node.OutputSubject(rt.jobID), func(m *nats.Msg) {
		var out atollpb.WorkerOutput
		if err := proto.Unmarshal(m.Data, &out); err != nil {
			log.Debug("worker output: bad message", "err", err)
			return
		}
		prefix, err := outputPrefix(&out)
		if err != nil {
			log.Debug("worker output: bad message", "err", err)
			return
		}
		w := stdout
		if out.Stderr {
			w = stderr
		}
		var b strings.Builder
		for _, line := range out.Lines {
			if len(line) > node.MaxOutputLine {
				line = line[:node.MaxOutputLine]
			}
			b.WriteString(prefix)
			b.WriteString(line)
			b.WriteByte('\n')
		}
		mu.Lock()
		_, _ = io.WriteString(w, b.String())
		mu.Unlock()
	})
	if err != nil {
		rt.log.Warn("worker output: not printed here", "err", err)
		return
	}
	_ = sub.SetPendingLimits(outputPendingMsgs, outputPendingBytes)
}

// outputPrefix validates a WorkerOutput and returns its lines' prefix.
func outputPrefix(out *atollpb.WorkerOutput) (string, error) {
	nodeID, err := ids.FromBytes(out.NodeId)
	if err != nil {
		return "", err
	}
	if len(out.Lines) > maxOutputLines || len(out.Name) > maxOutputName || out.Pid < 0 {
		return "", fmt.Errorf("%d lines, a name of %d bytes, pid %d", len(out.Lines), len(out.Name), out.Pid)
	}
	name := strings.Map(func(r rune) rune {
		if r < ' ' {
			return -1
		}
		return r
	}, out.Name)
	return fmt.Sprintf("(%s pid=%d, node=%s) ", name, out.Pid, nodeID.Short()), nil
}

// logToDriver reports whether a driver prints its tasks' output:
// unless WithoutLogToDriver or ATOLL_LOG_TO_DRIVER=0 says otherwise.
func logToDriver(cfg config) bool {
	return !cfg.noLogToDriver && os.Getenv(EnvLogToDriver) != "0"
}
