package atoll_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// piece is value i of the inline tests: 64 KiB, under the inline
// threshold, 16 of them past atoll.MaxInlineTotal.
func piece(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, 64<<10) }

var (
	manyPieces = atoll.NewMultiFunc1("inl.manyPieces", func(_ context.Context, n int) ([][]byte, error) {
		out := make([][]byte, n)
		for i := range out {
			out[i] = piece(i)
		}
		return out, nil
	})
	sumPieces = atoll.NewFuncN("inl.sumPieces", func(_ context.Context, ps [][]byte) (int, error) {
		n := 0
		for i, p := range ps {
			if !bytes.Equal(p, piece(i)) {
				return 0, atoll.ErrInvalidArgument
			}
			n += len(p)
		}
		return n, nil
	})
)

// Many values each small enough to travel inline add up past what one
// message between nodes can carry (NATS's 1 MiB max payload): past
// MaxInlineTotal they go to the object store, so a task with 16 returns
// of 64 KiB, and one with 16 such arguments, run on another node.
func TestManySmallValuesAcrossNodes(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 64 << 20}})
	ctx := testmain.JoinCluster(t, c)
	const n = 16
	refs := manyPieces.Remote(ctx, n, atoll.Value(n))
	for i, ref := range refs {
		got, err := atoll.Get(ctx, ref)
		if err != nil || !bytes.Equal(got, piece(i)) {
			t.Fatalf("return %d: %d bytes, %v", i, len(got), err)
		}
	}
	args := make([]atoll.Arg[[]byte], n)
	for i := range args {
		args[i] = atoll.Value(piece(i))
	}
	total, err := atoll.Get(ctx, sumPieces.Remote(ctx, args))
	if err != nil || total != n*64<<10 {
		t.Fatalf("16 arguments of 64 KiB: %d, %v", total, err)
	}
}
