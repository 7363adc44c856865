package objectstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// recordingTarget is a Target that records what it is asked to do.
type recordingTarget struct {
	ops   []string
	fail  error
	panic bool
}

func (r *recordingTarget) WriteFile(fill func(io.Writer) error) (string, error) {
	if r.panic {
		panic("boom")
	}
	r.ops = append(r.ops, "write")
	if err := fill(io.Discard); err != nil {
		return "", err
	}
	return "file", r.fail
}

func (r *recordingTarget) Open(name string) (spill.Readable, error) {
	r.ops = append(r.ops, "open "+name)
	return recordingFile{r}, nil
}

func (r *recordingTarget) Remove(name string) error {
	r.ops = append(r.ops, "remove "+name)
	return r.fail
}

type recordingFile struct{ r *recordingTarget }

func (f recordingFile) ReadAt(p []byte, off uint64) error {
	f.r.ops = append(f.r.ops, "read")
	clear(p)
	return nil
}

func (f recordingFile) Close() error {
	f.r.ops = append(f.r.ops, "close")
	return nil
}

func TestSpillerServesRestoresFirstByPriority(t *testing.T) {
	tgt := &recordingTarget{}
	st := &spillerState{target: tgt}
	st.writes = append(st.writes, &spillWrite{batch: 1}, &spillWrite{batch: 2})
	st.removes = append(st.removes, spillFree{ext: spill.Extent{File: "gone"}})
	for i, prio := range []int32{PriorityTaskArgument, PriorityGet, PriorityWait, PriorityGet} {
		st.reads = append(st.reads, &restoreRead{ticket: uint64(i + 1), priority: prio, extent: spill.Extent{File: "f"}})
	}
	var order []string
	log := slog.New(slog.DiscardHandler)
	for len(st.reads)+len(st.removes)+len(st.writes) > 0 {
		switch m := st.runNext(log).(type) {
		case *restoreReadDone:
			if m.err != nil {
				t.Fatal(m.err)
			}
			order = append(order, fmt.Sprintf("read%d", m.ticket))
		case *spillWritten:
			order = append(order, fmt.Sprintf("write%d", m.batch))
		case nil:
			order = append(order, "remove")
		}
	}
	if got := strings.Join(order, " "); got != "read2 read4 read3 read1 remove write1 write2" {
		t.Fatalf("order %s", got)
	}
	// One open for four reads of one file; closed when it is removed.
	if got := strings.Join(tgt.ops, ","); !strings.HasPrefix(got, "open f,") || strings.Count(got, "open") != 1 {
		t.Fatalf("target calls %s", got)
	}
	st.removes = append(st.removes, spillFree{ext: spill.Extent{File: "f"}})
	st.runNext(log)
	if got := tgt.ops[len(tgt.ops)-2:]; got[0] != "close" || got[1] != "remove f" {
		t.Fatalf("remove of an open file: %v", got)
	}
}

func TestSpillerTurnsPanicsIntoErrors(t *testing.T) {
	st := &spillerState{target: &recordingTarget{panic: true}}
	st.writes = append(st.writes, &spillWrite{batch: 7})
	m, ok := st.runNext(slog.New(slog.DiscardHandler)).(*spillWritten)
	if !ok || m.batch != 7 || m.err == nil || !strings.Contains(m.err.Error(), "panicked") {
		t.Fatalf("answer %+v", m)
	}
	st = &spillerState{target: &recordingTarget{fail: errors.New("EIO")}}
	st.removes = append(st.removes, spillFree{ext: spill.Extent{File: "x"}})
	if m := st.runNext(slog.New(slog.DiscardHandler)); m != nil {
		t.Fatalf("a removal is not answered, got %v", m)
	}
}
