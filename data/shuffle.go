package data

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
)

// RandomShuffle puts the rows in a random order, the same for a seed and
// a block layout (the same input blocks, or read tasks, in the same
// order): an all-to-all in which map task i (fused with the maps before
// it) permutes its rows with a generator seeded by (seed, i) and cuts
// them into P equal parts, and reduce task j concatenates part j of
// every map task and permutes it with a generator seeded by (seed, j).
// P (the output blocks) is Partitions(n) if given, else the number of
// input blocks when the source is the stage's (read tasks or stored
// blocks), else Config.Parallelism. Descending does not apply.
//
// No part is permuted whole by one task when it would be more than half
// the run's memory budget (its input would not fit the store): when the
// input's size is known before the maps run (stored blocks, or the
// estimate of read tasks), P is raised so that no part is; a part that
// still is, is cut again by split tasks that permute its pieces and cut
// them, as the map tasks did, into sub-parts of at most a quarter of the
// budget, each permuted by its own reduce task. Stats says which. The
// order is then the same for a seed, a block layout and a budget.
func (d *Dataset) RandomShuffle(seed uint64, opts ...SortOption) *Dataset {
	o := &logicalOp{name: "random_shuffle", kind: kindAllToAll, seed: seed}
	for _, f := range opts {
		f(o)
	}
	if o.parts < 0 || o.descending {
		return d.withErr(fmt.Errorf("%w: data: RandomShuffle takes Partitions(n >= 1) only", atoll.ErrInvalidArgument))
	}
	return d.with(o)
}

// shuffleMap permutes a map task's rows and cuts them into o.Parts
// equal row ranges.
func shuffleMap(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	rec, err := permuted(ctx, s, recs, rand.NewPCG(o.Seed, uint64(o.TaskIndex)))
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	rows, p := rec.NumRows(), int64(o.Parts)
	out := make([]arrow.RecordBatch, 0, p)
	for i := range p {
		out = append(out, rec.NewSlice(i*rows/p, (i+1)*rows/p))
	}
	return out, nil
}

// shuffleReduce permutes the pieces of one part.
func shuffleReduce(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	rec, err := permuted(ctx, recs[0].Schema(), recs, rand.NewPCG(o.Seed^0x9e3779b97f4a7c15, uint64(o.TaskIndex)))
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return splitBlocks([]arrow.RecordBatch{rec}, o.TargetMaxBlockSize, o.MaxBlocks), nil
}

// permuted concatenates recs and takes their rows in a random order.
func permuted(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, src rand.Source) (arrow.RecordBatch, error) {
	rec, err := concatRecords(compute.GetAllocator(ctx), s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	perm := rand.New(src).Perm(int(rec.NumRows()))
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Reserve(len(perm))
	for _, p := range perm {
		b.UnsafeAppend(int64(p))
	}
	idx := b.NewInt64Array()
	b.Release()
	defer idx.Release()
	return takeRecord(ctx, rec, idx)
}
