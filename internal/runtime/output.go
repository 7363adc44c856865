package runtime

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
// output (as atoll.WithoutLogToDriver).
const EnvLogToDriver = "ATOLL_LOG_TO_DRIVER"

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
func (d *Driver) streamWorkerOutput() {
	if !logToDriver(d.cfg.LogToDriver) || d.gateway == nil {
		return
	}
	stdout, stderr := io.Writer(os.Stdout), io.Writer(os.Stderr)
	if d.cfg.WorkerOutput != nil {
		stdout, stderr = d.cfg.WorkerOutput, d.cfg.WorkerOutput
	}
	var mu sync.Mutex // one line at a time
	log := d.log
	sub, err := d.node.Conn().Subscribe(node.OutputSubject(d.jobID), func(m *nats.Msg) {
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
		d.log.Warn("worker output: not printed here", "err", err)
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

// logToDriver reports whether a driver prints its tasks' output: if its
// options say so (on unless atoll.WithoutLogToDriver) and
// ATOLL_LOG_TO_DRIVER=0 does not say otherwise.
func logToDriver(on bool) bool {
	return on && os.Getenv(EnvLogToDriver) != "0"
}
