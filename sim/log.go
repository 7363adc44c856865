package sim

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"strconv"
	"time"
)

// eventLog is the run's event log: every delivery, timer, fault, thread
// step and verdict, one line each, prefixed with the simulated time. Its
// hash (FNV-1a, 64 bits) identifies a run: two runs of the same seed and
// schedule on the same commit have the same hash, or the simulator is
// not deterministic. The full log goes to a writer if one is given; the
// last lines are kept for a failure's report.
type eventLog struct {
	h     hash.Hash64
	lines uint64
	now   *time.Time
	out   io.Writer
	ring  []string
	next  int
	buf   []byte
}

const ringLines = 400

func newEventLog(now *time.Time, out io.Writer) *eventLog {
	return &eventLog{h: fnv.New64a(), now: now, out: out, ring: make([]string, 0, ringLines)}
}

// add logs one line.
func (l *eventLog) add(format string, args ...any) {
	l.buf = l.buf[:0]
	l.buf = strconv.AppendFloat(l.buf, since(*l.now).Seconds(), 'f', 6, 64)
	l.buf = append(l.buf, ' ')
	l.buf = fmt.Appendf(l.buf, format, args...)
	l.buf = append(l.buf, '\n')
	_, _ = l.h.Write(l.buf)
	l.lines++
	if l.out != nil {
		_, _ = l.out.Write(l.buf)
	}
	s := string(l.buf[:len(l.buf)-1])
	if len(l.ring) < ringLines {
		l.ring = append(l.ring, s)
	} else {
		l.ring[l.next] = s
		l.next = (l.next + 1) % ringLines
	}
}

// Hash is the log's hash so far, in hex.
func (l *eventLog) Hash() string { return fmt.Sprintf("%016x", l.h.Sum64()) }

// tail returns the last lines, oldest first.
func (l *eventLog) tail() []string {
	if len(l.ring) < ringLines {
		return append([]string(nil), l.ring...)
	}
	return append(append([]string(nil), l.ring[l.next:]...), l.ring[:l.next]...)
}
