package cluster

import (
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// TestValidBorrowReport: a borrow report from the network is refused
// unless every id is well formed, it is for an owner on this node, it is
// numbered and it lists at most owner.MaxLent objects.
func TestValidBorrowReport(t *testing.T) {
	self := ids.NewNodeID()
	good := func() *atollpb.BorrowReport {
		return &atollpb.BorrowReport{OwnerId: ids.NewWorkerID().Bytes(), OwnerNode: self.Bytes(), BorrowerWorkerId: ids.NewWorkerID().Bytes(),
			BorrowerActorId: ids.NewActorID().Bytes(), Borrows: [][]byte{ids.PutObjectID(ids.NewTaskID(), 1).Bytes()}, BorrowsSeq: 7}
	}
	if err := validBorrowReport(good(), self); err != nil {
		t.Fatalf("a valid report refused: %v", err)
	}
	tooMany := good()
	tooMany.Borrows = make([][]byte, owner.MaxLent+1)
	for i := range tooMany.Borrows {
		tooMany.Borrows[i] = tooMany.Borrows[0]
	}
	tooMany.Borrows[0] = ids.PutObjectID(ids.NewTaskID(), 1).Bytes()
	for name, c := range map[string]struct {
		mutate func(*atollpb.BorrowReport)
		want   string
	}{
		"owner":       {func(r *atollpb.BorrowReport) { r.OwnerId = []byte("short") }, "owner_id"},
		"borrower":    {func(r *atollpb.BorrowReport) { r.BorrowerWorkerId = nil }, "borrower_worker_id"},
		"actor":       {func(r *atollpb.BorrowReport) { r.BorrowerActorId = []byte{1} }, "borrower_actor_id"},
		"other node":  {func(r *atollpb.BorrowReport) { r.OwnerNode = ids.NewNodeID().Bytes() }, "not this node"},
		"no seq":      {func(r *atollpb.BorrowReport) { r.BorrowsSeq = 0 }, "borrows_seq"},
		"bad object":  {func(r *atollpb.BorrowReport) { r.Borrows = append(r.Borrows, []byte("x")) }, "object_id"},
		"too many":    {func(r *atollpb.BorrowReport) { r.Borrows = tooMany.Borrows }, "more than"},
		"no node":     {func(r *atollpb.BorrowReport) { r.OwnerNode = nil }, "not this node"},
		"actor empty": {func(r *atollpb.BorrowReport) { r.BorrowerActorId = make([]byte, 3) }, "borrower_actor_id"},
	} {
		r := good()
		c.mutate(r)
		if err := validBorrowReport(r, self); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", name, err, c.want)
		}
	}
}
