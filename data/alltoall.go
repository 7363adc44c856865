package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The hash all-to-alls (aggregate, random_shuffle): a map task per input
// block (the stage's fused ops, then P returns), then a reduce task per
// part. Their map outputs stay in the store until the reduces run, as a
// sort's do; the store spills them.

// shapeOutput shapes a task's output for the output kinds added beside
// the sort's (task.go).
func shapeOutput(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	switch o.Kind {
	case "agg_map":
		return aggMap(ctx, s, recs, o)
	case "agg_reduce":
		return aggReduce(ctx, s, recs, o)
	case "shuffle_map":
		return shuffleMap(ctx, s, recs, o)
	case "shuffle_reduce":
		return shuffleReduce(ctx, s, recs, o)
	case "hash_split":
		return hashSplit(ctx, s, recs, o.GroupKeys, o.Parts)
	}
	return nil, errs.Malformedf(specWhat, "unknown output %q", o.Kind)
}

// defaultParts is the number of parts of a hash all-to-all without
// Partitions: the number of input blocks when the stage reads them from
// its source (read tasks or stored blocks), else Config.Parallelism.
func (a *allToAll) defaultParts() int {
	switch s := a.src.(type) {
	case *listUnits:
		return max(1, len(s.us))
	case *streamUnits:
		if l, ok := s.in.(*blockList); ok {
			return max(1, len(l.bs))
		}
	}
	return a.r.cfg.Parallelism
}

// hashShuffle runs the map side of an aggregate or a random shuffle and
// returns the stream of its reduce tasks.
func (a *allToAll) hashShuffle(ctx context.Context) (blockStream, error) {
	parts := a.op.parts
	if parts == 0 {
		parts = a.defaultParts()
	}
	var mapOut, reduceOut outSpec
	switch a.op.name {
	case "aggregate":
		mapOut = outSpec{Kind: "agg_map", GroupKeys: a.op.groupKeys, Aggs: a.op.aggs}
		reduceOut = outSpec{Kind: "agg_reduce", GroupKeys: a.op.groupKeys, Aggs: a.op.aggs}
	case "random_shuffle":
		mapOut = outSpec{Kind: "shuffle_map", Seed: a.op.seed}
		reduceOut = outSpec{Kind: "shuffle_reduce", Seed: a.op.seed}
	default:
		return nil, fmt.Errorf("data: %s is not a hash all-to-all", a.op.name)
	}
	mapOut.Parts = parts
	ms := a.mapStream(a.sub(a.op.name+"_map"), mapOut)
	pieces, err := drain(ctx, ms, a.r)
	if err != nil {
		return nil, err
	}
	return &taskStream{r: a.r, st: a.sub(a.op.name + "_reduce"), src: &listUnits{us: byPart(pieces, parts)}, out: reduceOut, opts: a.opts}, nil
}
