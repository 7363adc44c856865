package jobs

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Log reads (`atoll logs`, `atoll job logs`): every cluster node serves
// reads of its logs on <prefix>.node.<id>.logread (LogRead → LogChunk),
// open to the reader role: its own log (Config.NodeLog, else what its
// standard error goes to when that is a file), the output of the jobs it
// runs, and its worker processes' output. A read returns at most
// MaxLogChunk bytes from any offset; a follower asks again from the next
// one. (The dashboard's "logs" subject, which internal/node serves,
// sends the end of the node's log only.)

const (
	// MaxLogChunk bounds one log read.
	MaxLogChunk = 256 << 10
	// defaultLogChunk is a read's size when the request gives none.
	defaultLogChunk = 64 << 10
)

// serveLogs answers one LogRead (on a goroutine of its own).
func (s *jobService) serveLogs(m *nats.Msg) {
	s.respond(m, s.readLog(m.Data))
}

func (s *jobService) readLog(data []byte) *atollpb.LogChunk {
	var req atollpb.LogRead
	if err := proto.Unmarshal(data, &req); err != nil {
		return &atollpb.LogChunk{Error: errs.ToProto(errs.Invalidf("log read: %v", err))}
	}
	path, final, err := s.logPath(&req)
	if err != nil {
		return &atollpb.LogChunk{Error: errs.ToProto(err)}
	}
	max := int64(req.MaxBytes)
	if max <= 0 {
		max = defaultLogChunk
	}
	max = min(max, MaxLogChunk)
	f, err := os.Open(path)
	if err != nil {
		return &atollpb.LogChunk{Error: errs.ToProto(errs.NotFoundf("log: %v", err))}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &atollpb.LogChunk{Error: errs.ToProto(errs.Unavailablef("log: %v", err))}
	}
	size := fi.Size()
	off := req.Offset
	if off < 0 {
		off = max64(size+off, 0)
	}
	off = min(off, size)
	buf := make([]byte, min(max, size-off))
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return &atollpb.LogChunk{Error: errs.ToProto(errs.Unavailablef("log: %v", err))}
	}
	return &atollpb.LogChunk{Data: buf[:n], Offset: uint64(off), Size: uint64(size), Final: final}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// logPath resolves a read's log and whether it will not grow any more.
func (s *jobService) logPath(req *atollpb.LogRead) (string, bool, error) {
	switch req.Kind {
	case atollpb.LogKind_LOG_NODE:
		if s.cfg.NodeLog != "" {
			return s.cfg.NodeLog, false, nil
		}
		fi, err := os.Stderr.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return "", false, errs.NotFoundf("node %s: %v", s.cfg.NodeID.Short(), errNoNodeLog)
		}
		return "/proc/self/fd/2", false, nil
	case atollpb.LogKind_LOG_JOB:
		id, err := ids.FromBytes(req.Id)
		if err != nil {
			return "", false, errs.Invalidf("log read: job id: %v", err)
		}
		path, ended, ok := s.jobLog(id)
		if !ok {
			return "", false, errs.NotFoundf("job %s has no log on node %s", id.String(), s.cfg.NodeID.Short())
		}
		return path, ended, nil
	case atollpb.LogKind_LOG_WORKER:
		id, err := ids.FromBytes(req.Id)
		if err != nil {
			return "", false, errs.Invalidf("log read: worker id: %v", err)
		}
		if s.cfg.WorkerLog != nil {
			if path, ended, ok := s.cfg.WorkerLog(id); ok {
				return path, ended, nil
			}
		}
		return "", false, errs.NotFoundf("worker %s has no log on node %s", id.String(), s.cfg.NodeID.Short())
	}
	return "", false, errs.Invalidf("log read: unknown log kind %v", req.Kind)
}

// ReadLog reads at most max bytes of a log of node from offset (negative:
// from the end), through nc (`atoll logs`).
func ReadLog(ctx context.Context, nc *nats.Conn, node ids.NodeID, kind atollpb.LogKind, id []byte, offset int64, max int) (*atollpb.LogChunk, error) {
	b, err := proto.Marshal(&atollpb.LogRead{Kind: kind, Id: id, Offset: offset, MaxBytes: uint32(min(max, MaxLogChunk))})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, jobSubject(node, logReadKind), b)
	if err != nil {
		return nil, requestError("read the log of node "+node.Short(), err)
	}
	var c atollpb.LogChunk
	if err := proto.Unmarshal(msg.Data, &c); err != nil {
		return nil, errs.Invalidf("node %s answered a log read with a bad message: %v", node.Short(), err)
	}
	if c.Error != nil {
		return nil, errs.FromProto(c.Error)
	}
	if c.Offset > c.Size || uint64(len(c.Data)) > c.Size-c.Offset {
		return nil, errs.Invalidf("node %s answered a log read with %d bytes at %d of %d", node.Short(), len(c.Data), c.Offset, c.Size)
	}
	return &c, nil
}
