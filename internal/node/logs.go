package node

import (
	"io"
	"os"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
)

// Bounds of a log request: the end of the log a node sends, by default
// and at most (below NATS's default 1 MiB payload, with room for the
// rest of the reply).
const (
	defaultLogBytes = 64 << 10
	maxLogBytes     = 1 << 20
	// logRequestsPending bounds the log requests waiting for the node's
	// answer; more are dropped (their askers time out).
	logRequestsPending = 16
)

// serveLogs answers log requests (cluster.NodeLogSubject) with the end
// of Config.LogFile, or with an empty NodeLog when the node has none.
// The requests are answered one at a time on the subscription's
// goroutine: each reads at most maxLogBytes of one file the node's own
// config names, and the subscription holds at most logRequestsPending.
func (n *Node) serveLogs() error {
	sub, err := n.nc.Subscribe(cluster.NodeLogSubject(n.id), n.answerLog)
	if err != nil {
		return err
	}
	if err := sub.SetPendingLimits(logRequestsPending, logRequestsPending*1024); err != nil {
		_ = sub.Unsubscribe()
		return err
	}
	n.logSub = sub
	return nil
}

func (n *Node) answerLog(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	var req atollpb.NodeLogRequest
	if err := proto.Unmarshal(m.Data, &req); err != nil {
		n.log.Debug("bad log request", "err", err)
		return
	}
	limit := int64(defaultLogBytes)
	if req.MaxBytes > 0 {
		limit = int64(min(req.MaxBytes, maxLogBytes))
	}
	if mp := n.nc.MaxPayload() - 4096; mp > 0 && limit > mp {
		limit = mp
	}
	out := &atollpb.NodeLog{NodeId: n.id.Bytes()}
	if path := n.cfg.LogFile; path != "" {
		out.File = path
		if err := readTail(path, limit, out); err != nil {
			n.log.Debug("read the log file for a log request", "file", path, "err", err)
		}
	}
	b, err := proto.Marshal(out)
	if err != nil {
		return
	}
	_ = m.Respond(b)
}

// readTail reads the last limit bytes of path into out (data, size,
// truncated). A tail that starts mid-line starts after its first line
// break.
func readTail(path string, limit int64, out *atollpb.NodeLog) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	out.Size = uint64(size)
	off := max(size-limit, 0)
	data := make([]byte, size-off)
	k, err := f.ReadAt(data, off)
	if err != nil && err != io.EOF {
		return err
	}
	data = data[:k]
	if off > 0 {
		out.Truncated = true
		for i, c := range data {
			if c == '\n' {
				data = data[i+1:]
				break
			}
		}
	}
	out.Data = data
	return nil
}
