package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
)

// Joins (Polars' join, Ray Data's join): rows of two datasets paired on
// equal keys. Two strategies, chosen when the dataset runs:
//
//   - broadcast, when the right side is estimated under the threshold
//     (Config.BroadcastThreshold, or the BroadcastBelow option) and the
//     join keeps no unmatched right row (inner, left, semi, anti): the
//     right side runs first, its blocks stay in the store, and every task
//     of the left's stage takes them as shared arguments and probes a hash
//     table of them; the join fuses with the maps around it, and a worker
//     builds the table once for all its tasks (joinTables);
//   - shuffled, otherwise: both sides are cut into P parts by a hash of
//     their keys (the right's map tasks first, then the left's, fused
//     with the maps before the join), and a join task per part and group
//     of the left's pieces probes a table of the part's right rows. The
//     left's pieces are joined as they come (the join overlaps the left's
//     map tasks) in groups within the run's budget, so a part larger than
//     the store streams through it, its pieces spilled and restored once.
//     A right or full join's unmatched right rows come from the task that
//     saw every left row of the part, or, when a part took several tasks,
//     from one more task given the union of the rows they matched. A
//     part whose right rows are more than half the budget (a frequent
//     key's rows all hash to one part) is joined in chunks of its right
//     rows, each chunk with every left group of the part; a left group's
//     rows that no chunk matched (left, full, anti) or some chunk matched
//     (semi) come from one more task given the union of the left rows
//     the chunks matched. A join task reads its part's right pieces
//     itself, and only when its worker has no table of them: a worker
//     builds a part's table once (joinTables) and its later tasks of the
//     part leave the pieces where they are, spilled or not.
//
// Keys match when every key is equal; a key with a null matches nothing
// (SQL's rule). The output is the left's columns, then the right's but
// its keys (a right column whose name the left has gets the suffix,
// "_right" by default); the keys take the right's values in rows without
// a left one. Semi and anti joins keep the left's columns only. Rows
// come in no particular order.

// JoinType says which rows a Join keeps.
type JoinType int

const (
	// InnerJoin keeps the pairs of rows of equal keys.
	InnerJoin JoinType = iota
	// LeftJoin keeps those and the left rows without a match (nulls in
	// the right's columns).
	LeftJoin
	// RightJoin keeps the pairs and the right rows without a match.
	RightJoin
	// FullJoin keeps the pairs and the rows of either side without a
	// match.
	FullJoin
	// SemiJoin keeps the left rows with a match, once each.
	SemiJoin
	// AntiJoin keeps the left rows without a match.
	AntiJoin
)

var joinNames = []string{"inner", "left", "right", "full", "semi", "anti"}

func (t JoinType) String() string {
	if t < 0 || int(t) >= len(joinNames) {
		return fmt.Sprintf("JoinType(%d)", int(t))
	}
	return joinNames[t]
}

// JoinOption sets how a Join runs.
type JoinOption func(*joinPlan)

// RightOn names the right's key columns, when they are not named as the
// left's (one per left key, in order).
func RightOn(columns ...string) JoinOption {
	return func(p *joinPlan) { p.spec.RightKeys = append([]string(nil), columns...) }
}

// Suffix is appended to the right's columns whose names the left has
// (default "_right").
func Suffix(s string) JoinOption { return func(p *joinPlan) { p.spec.Suffix = s } }

// BroadcastBelow broadcasts the right side when its estimated size is
// below bytes (default Config.BroadcastThreshold); 0 never broadcasts.
func BroadcastBelow(bytes int64) JoinOption {
	return func(p *joinPlan) { p.threshold, p.thresholdSet = bytes, true }
}

// JoinPartitions sets the parts of a shuffled join (default: the left's
// read tasks or blocks, more when the sides' estimated size needs them
// to fit the run's budget).
func JoinPartitions(n int) JoinOption { return func(p *joinPlan) { p.parts = n } }

// joinPlan is a Join as the dataset holds it until it runs.
type joinPlan struct {
	right        *Dataset
	how          JoinType
	spec         joinSpec
	threshold    int64
	thresholdSet bool
	parts        int
	// set when the run plans the join
	broadcast   bool
	rightEst    int64 // the right's estimated bytes (-1: unknown)
	rightSchema *arrow.Schema
	leftSchema  *arrow.Schema // the left's, when the plan knows it
}

// Join pairs d's rows (the left) with right's on equal keys: on names the
// key columns (RightOn when the right names them otherwise). See
// JoinType for what each join keeps; the join is broadcast or shuffled
// (see the package doc).
//
//	orders.Join(customers, data.LeftJoin, []string{"customer_id"}, data.RightOn("id"))
func (d *Dataset) Join(right *Dataset, how JoinType, on []string, opts ...JoinOption) *Dataset {
	p := &joinPlan{right: right, how: how, spec: joinSpec{How: how.String(), LeftKeys: append([]string(nil), on...), Suffix: "_right"}}
	for _, o := range opts {
		o(p)
	}
	if p.spec.RightKeys == nil {
		p.spec.RightKeys = p.spec.LeftKeys
	}
	switch {
	case right == nil:
		return d.withErr(fmt.Errorf("%w: data: Join with a nil dataset", atoll.ErrInvalidArgument))
	case right.err != nil:
		return d.withErr(right.err)
	case how < InnerJoin || how > AntiJoin:
		return d.withErr(fmt.Errorf("%w: data: Join: %v", atoll.ErrInvalidArgument, how))
	case len(on) == 0 || len(p.spec.RightKeys) != len(on):
		return d.withErr(fmt.Errorf("%w: data: Join needs keys, as many on each side (%d and %d)", atoll.ErrInvalidArgument, len(on), len(p.spec.RightKeys)))
	case p.parts < 0 || p.threshold < 0:
		return d.withErr(fmt.Errorf("%w: data: Join: JoinPartitions(%d), BroadcastBelow(%d)", atoll.ErrInvalidArgument, p.parts, p.threshold))
	}
	for _, k := range append(slices.Clone(p.spec.LeftKeys), p.spec.RightKeys...) {
		if k == "" {
			return d.withErr(fmt.Errorf("%w: data: Join: an empty key column", atoll.ErrInvalidArgument))
		}
	}
	return d.with(&logicalOp{name: "join", kind: kindAllToAll, join: p})
}

// joinSpec is a join as a task runs it (atollpb.DataJoin).
type joinSpec struct {
	How                 string
	LeftKeys, RightKeys []string
	Suffix              string
	BuildKey            string
	SharedFrom          int
	SharedTo            int
	Left                int
	EmitUnmatchedBuild  bool
	ReportMatched       bool
	Matched             []byte
	UnmatchedOnly       bool
	LeftSchema          []byte
	// a chunked part's tasks (join_exec.go)
	ReportLeftMatched bool
	LeftRest          bool
	LeftMatched       []byte
	RightSchema       []byte
	// LazyRight: the right's pieces are one argument of their refs
	// (lazyRefs), read only when the worker has no table of them
	LazyRight bool
}

func (js *joinSpec) isRightKey(name string) bool { return slices.Contains(js.RightKeys, name) }

// keepsUnmatchedBuild says whether the join emits right rows without a
// match.
func (js *joinSpec) keepsUnmatchedBuild() bool { return js.How == "right" || js.How == "full" }

// outSchema is the join's output schema for inputs of schemas l and r,
// checking the keys.
func (js *joinSpec) outSchema(l, r *arrow.Schema) (*arrow.Schema, error) {
	for k, lk := range js.LeftKeys {
		i, err := keyColumn(l, lk)
		if err != nil {
			return nil, err
		}
		j, err := keyColumn(r, js.RightKeys[k])
		if err != nil {
			return nil, err
		}
		lt, rt := l.Field(i).Type, r.Field(j).Type
		if !arrow.TypeEqual(lt, rt) {
			return nil, &ColumnError{Op: "Join", Column: lk, Type: lt.String() + " and " + rt.String() + " (" + js.RightKeys[k] + ")",
				Supported: "keys of one type on both sides: Cast one with WithColumn"}
		}
		if !joinKeyType(lt) {
			return nil, &ColumnError{Op: "Join", Column: lk, Type: lt.String(), Supported: "integers, floats, strings, bools, timestamps, dates"}
		}
	}
	if js.How == "semi" || js.How == "anti" {
		return l, nil
	}
	nullLeft, nullRight := js.How == "right" || js.How == "full", js.How == "left" || js.How == "full"
	var fields []arrow.Field
	names := map[string]bool{}
	for _, f := range l.Fields() {
		if nullLeft && !slices.Contains(js.LeftKeys, f.Name) {
			f.Nullable = true
		}
		fields = append(fields, f)
		names[f.Name] = true
	}
	for _, f := range r.Fields() {
		if js.isRightKey(f.Name) {
			continue
		}
		if names[f.Name] {
			f.Name += js.Suffix
		}
		if names[f.Name] {
			return nil, &ColumnError{Op: "Join", Column: f.Name, Columns: slices.Collect(mapsKeys(names)),
				Type: "a name both sides have", Supported: "a Suffix that makes it unique"}
		}
		if nullRight {
			f.Nullable = true
		}
		fields = append(fields, f)
		names[f.Name] = true
	}
	return arrow.NewSchema(fields, nil), nil
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// joinKeyType says whether keys of type t join (hashKeys, keyEqual).
func joinKeyType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.BOOL, arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return true
	}
	return false
}

// planJoins decides each join's strategy for a run: the right side's
// schema and estimated bytes, the broadcast threshold. A broadcast join
// becomes a map-like operation (it fuses with the left's maps). It
// returns the ops with the joins resolved (copies; d's stay as built).
func planJoins(ctx context.Context, r *run, ops []*logicalOp) ([]*logicalOp, error) {
	out := slices.Clone(ops)
	for i, o := range ops {
		if o.join == nil {
			continue
		}
		p := *o.join
		rs, est, err := p.right.planEstimate()
		if err != nil {
			return nil, err
		}
		p.rightSchema, p.rightEst = rs, est
		threshold := r.cfg.BroadcastThreshold
		if p.thresholdSet {
			threshold = p.threshold
		}
		threshold = min(threshold, r.budget/2)
		p.broadcast = est >= 0 && est <= threshold && !p.spec.keepsUnmatchedBuild()
		no := *o
		no.join = &p
		if p.broadcast {
			no.kind = kindMap
			no.op = opSpec{Kind: "join_probe", Join: &p.spec}
		}
		out[i] = &no
	}
	return out, nil
}

// planEstimate is d's output schema (nil: unknown before running) and an
// estimate of its bytes (-1: unknown): its source's, as long as no
// operation can make more rows than it takes.
func (d *Dataset) planEstimate() (*arrow.Schema, int64, error) {
	if d.err != nil {
		return nil, -1, d.err
	}
	var in *arrow.Schema
	est := int64(-1)
	switch {
	case d.source.open != nil:
		rs, err := d.source.open(d.cfg)
		if err != nil {
			return nil, -1, err
		}
		in = rs.schema()
		schemas, err := checkOps(in, d.ops)
		if err != nil {
			return nil, -1, err
		}
		us, _, err := rs.units(pushdownFor(d.ops, schemas))
		if err != nil {
			return nil, -1, err
		}
		est = 0
		for _, u := range us {
			est += u.estimate
		}
	case d.source.inputs == nil:
		est = 0
		for _, b := range d.source.blocks {
			est += b.bytes
		}
		if len(d.source.blocks) > 0 {
			in = d.source.blocks[0].schema
		}
	}
	schemas, err := checkOps(in, d.ops)
	if err != nil {
		return nil, -1, err
	}
	for _, o := range d.ops[1:] {
		switch o.op.Kind {
		case "flat_map", "map", "map_batches", "map_batches_class", "add_column":
			if o.kind == kindMap {
				est = -1 // a function may make anything
			}
		}
		if o.join != nil || o.kind == kindAllToAll && o.name != "sort" && o.name != "repartition" && o.name != "random_shuffle" {
			est = -1
		}
	}
	return schemas[len(schemas)-1], est, nil
}

// newBuildKey names one run's join in the workers' table caches.
func newBuildKey() string {
	return fmt.Sprintf("join-%016x", rand.Uint64())
}

// describe is the join in the stage's stats.
func (p *joinPlan) describe() string {
	how := "shuffled"
	if p.broadcast {
		how = "broadcast"
	}
	return fmt.Sprintf("%s %s join on %s", how, p.spec.How, strings.Join(p.spec.LeftKeys, ", "))
}
