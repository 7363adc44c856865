package data

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The planner: a pure function from a dataset's logical operations to
// the physical stages that execute them, with the reason for every
// boundary (plan_test.go runs the scripts in testdata/plan.txt).
//
// Fusion rules (after Ray Datasets' stage fusion):
//   - a read and the map-like operations after it fuse into one stage
//     while they share the compute strategy (tasks or actors, and for
//     actors the pool's size) and the resources per task;
//   - an all-to-all operation (sort, repartition, aggregate,
//     random_shuffle) fuses with the map-like
//     operations before it (its map side runs in the same tasks), never
//     with those after it: they start a new stage over its output;
//   - a limit ends its stage: the driver counts rows and the next stage
//     starts with the limit, cutting the last block.

// opKind classifies logical operations for fusion.
type opKind int

const (
	kindRead opKind = iota
	kindMap
	kindAllToAll
	kindLimit
)

// logicalOp is one operation of a dataset, in order.
type logicalOp struct {
	name      string // read, map, map_batches, filter, select, drop, add_column, limit, sort, repartition, write_parquet
	kind      opKind
	compute   string             // "tasks" or "actors"
	pool      poolSize           // actors: the pool (ActorPool)
	resources map[string]float64 // per task; nil means {CPU: 1}
	op        opSpec             // what a task does (map-like and limit)
	// all-to-all parameters
	keys       []SortKey // sort: the keys in order
	descending bool      // set by Descending, read by Sort and Key
	parts      int
	groupKeys  []string  // aggregate: the group columns
	aggs       []Agg     // aggregate: what to compute per group
	seed       uint64    // random_shuffle
	join       *joinPlan // join (a map-like op once broadcast)
}

func (o *logicalOp) resourceKey() string {
	r := o.resources
	if r == nil {
		r = map[string]float64{"CPU": 1}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, r[k]))
	}
	return strings.Join(parts, ",")
}

// title is the Dataset method that made an all-to-all op, for Stats.
func (o *logicalOp) title() string {
	switch o.name {
	case "sort":
		return "Sort"
	case "random_shuffle":
		return "RandomShuffle"
	case "repartition":
		return "Repartition"
	case "aggregate":
		return "GroupBy"
	}
	return o.name
}

func (o *logicalOp) strategy() string {
	if o.compute == "" {
		return "tasks"
	}
	return o.compute
}

// stage is one physical stage: map-like ops run per block in one task
// (the first may be the read), optionally ending with an all-to-all whose
// map side runs in those same tasks.
type stage struct {
	ops      []*logicalOp // map-like (or read, or limit first)
	allToAll *logicalOp
	// why this stage starts where it does (for the plan scripts)
	why string
}

// name is the stage's name in stats: its ops joined by "->".
func (s *stage) name() string {
	var names []string
	for _, o := range s.ops {
		names = append(names, o.name)
	}
	if s.allToAll != nil {
		names = append(names, s.allToAll.name)
	}
	return strings.Join(names, "->")
}

// compatible says whether op b can run in the same task as op a, and if
// not, why.
func compatible(a, b *logicalOp) (bool, string) {
	if a.strategy() != b.strategy() {
		return false, fmt.Sprintf("%s runs on %s, %s on %s", a.name, a.strategy(), b.name, b.strategy())
	}
	if a.pool != b.pool {
		return false, fmt.Sprintf("%s runs on a pool of %d-%d actors, %s on %d-%d", a.name, a.pool.min, a.pool.max, b.name, b.pool.min, b.pool.max)
	}
	if a.resourceKey() != b.resourceKey() {
		return false, fmt.Sprintf("%s needs {%s}, %s needs {%s}", a.name, a.resourceKey(), b.name, b.resourceKey())
	}
	return true, ""
}

// plan turns logical ops (ops[0] is the source) into stages.
func plan(ops []*logicalOp) []*stage {
	var stages []*stage
	var cur *stage
	start := func(why string) {
		cur = &stage{why: why}
		stages = append(stages, cur)
	}
	for i, o := range ops {
		switch {
		case i == 0:
			start("source")
			if o.kind == kindAllToAll {
				cur.allToAll = o
				continue
			}
			cur.ops = append(cur.ops, o)
		case cur.allToAll != nil:
			prev := cur.allToAll.name
			if o.kind == kindAllToAll {
				start(fmt.Sprintf("%s follows the all-to-all %s (an all-to-all fuses with the maps before it only)", o.name, prev))
				cur.allToAll = o
				continue
			}
			start(fmt.Sprintf("%s follows the all-to-all %s (an all-to-all fuses with the maps before it only)", o.name, prev))
			cur.ops = append(cur.ops, o)
		case cur.ops[len(cur.ops)-1].kind == kindLimit && len(cur.ops) > 0 && o.kind != kindLimit:
			start(fmt.Sprintf("%s follows a limit (the driver cuts the rows between stages)", o.name))
			cur.ops = append(cur.ops, o)
		case o.kind == kindLimit:
			if len(cur.ops) == 1 && cur.ops[0].kind == kindLimit {
				cur.ops = append(cur.ops, o)
				continue
			}
			start("limit ends the stage before it: the driver counts rows")
			cur.ops = append(cur.ops, o)
		default:
			last := cur.ops[len(cur.ops)-1]
			if ok, why := compatible(last, o); !ok {
				start(why)
				if o.kind == kindAllToAll {
					cur.allToAll = o
				} else {
					cur.ops = append(cur.ops, o)
				}
				continue
			}
			if o.kind == kindAllToAll {
				cur.allToAll = o
			} else {
				cur.ops = append(cur.ops, o)
			}
		}
	}
	return stages
}
