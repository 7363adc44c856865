package owner

import (
	"errors"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestLendMalformed: lent entries from the wire with a malformed id, no
// value or a malformed contained ref are refused with ErrInvalidArgument;
// the well-formed ones are lent.
func TestLendMalformed(t *testing.T) {
	tb := New(Config{Worker: ids.NewWorkerID(), Node: ids.NewNodeID()})
	good := ids.PutObjectID(ids.NewTaskID(), 1)
	v := &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte("x")},
		ContainedRefs: []*atollpb.ObjectRef{{ObjectId: []byte("short")}}}
	lent, err := tb.Lend([]*atollpb.ReturnObject{
		{ObjectId: []byte("bad")},
		{ObjectId: ids.PutObjectID(ids.NewTaskID(), 2).Bytes()}, // no value
		{ObjectId: good.Bytes(), Value: v},
	}, ids.NewWorkerID(), ids.NewNodeID())
	if !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
	if len(lent) != 1 || lent[0] != good {
		t.Fatalf("lent %v, want only %s", lent, good)
	}
	tb.DropRef(lent...)
	if s := tb.Stats(); s.Objects != 0 {
		t.Fatalf("%d objects left", s.Objects)
	}
}

// TestBorrowersBounded: past MaxBorrowers, a new borrower's report is
// refused (counted), and the objects it names are not kept for it.
func TestBorrowersBounded(t *testing.T) {
	tb := New(Config{Worker: ids.NewWorkerID(), Node: ids.NewNodeID()})
	id := ids.PutObjectID(ids.NewTaskID(), 1)
	tb.Put(id, &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte("x")}}, nil, nil)
	report := &atollpb.TaskResult{BorrowsReported: true, Borrows: [][]byte{id.Bytes()}}
	for i := 0; i < MaxBorrowers; i++ {
		tb.applyBorrows(borrowerKey{worker: ids.NewWorkerID()}, report.BorrowsSeq, report.Borrows)
	}
	tb.applyBorrows(borrowerKey{worker: ids.NewWorkerID()}, report.BorrowsSeq, report.Borrows)
	s := tb.Stats()
	if s.Borrowers != MaxBorrowers || s.BorrowsRefused != 1 || tb.objects[id].refs != 1+MaxBorrowers {
		t.Fatalf("borrowers %d refused %d refs %d", s.Borrowers, s.BorrowsRefused, tb.objects[id].refs)
	}
}
