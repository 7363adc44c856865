package data

import (
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// A task's spec travels to the worker as an atollpb.DataTask, and the
// task's first return, its metadata, back to the driver as an
// atollpb.DataTaskMeta (taskMeta). The receiver checks each before it
// uses it: a spec that fails fails the task with a MalformedError, and
// metadata that fails fails the run.

const (
	specWhat  = "dataset task spec"
	metaWhat  = "dataset task metadata"
	blockWhat = "dataset block"
)

// Bounds on what a spec or metadata from the wire may ask for, beyond
// its size (its bytes are in memory already).
const (
	// maxReturns bounds a task's returns (blocks or parts).
	maxReturns = 1 << 20
	// maxOps bounds the operations of one task.
	maxOps = 1 << 10
	// maxNames bounds lists of columns, keys, aggregations and row
	// groups.
	maxNames = 1 << 16
	// maxSamples bounds the sort samples a task takes.
	maxSamples = 1 << 24
	// maxString bounds a name or a path.
	maxString = 64 << 10
)

// taskMeta is a task's first return: the rows and bytes of each block it
// returned, their schema, sort samples, its wall and CPU time and the
// attempt that succeeded.
type taskMeta = atollpb.DataTaskMeta

var (
	readKinds = map[string]bool{"range": true, "parquet": true, "csv": true, "json": true}
	// opKinds maps each op kind to whether it calls a registered function.
	opKinds = map[string]bool{"map": true, "map_batches": true, "map_batches_class": true, "flat_map": true, "filter": true,
		"add_column": true, "select": false, "drop": false, "rename": false, "sample": false, "limit": false, "write_parquet": false, "write_csv": false, "write_json": false,
		"where": false, "with_column": false, "project": false, "join_probe": false}
	outKinds = map[string]bool{"blocks": true, "sort_sample": true, "key_sample": true, "split": true, "merge_sort": true,
		"agg_map": true, "agg_reduce": true, "shuffle_map": true, "shuffle_reduce": true, "hash_split": true, "agg_split": true}
	joinHows = map[string]bool{"inner": true, "left": true, "right": true, "full": true, "semi": true, "anti": true}
	aggFuncs = map[string]bool{"count": true, "sum": true, "mean": true, "min": true, "max": true, "std": true}
)

// encodeTask marshals a task's spec.
func encodeTask(s *taskSpec) []byte {
	m := &atollpb.DataTask{Ops: make([]*atollpb.DataOp, len(s.Ops)), Out: &atollpb.DataOutput{
		Kind: s.Out.Kind, MaxBlocks: int64(s.Out.MaxBlocks), TargetMaxBlockSize: s.Out.TargetMaxBlockSize,
		Samples: int64(s.Out.Samples), Parts: int64(s.Out.Parts), Bounds: s.Out.Bounds, GroupKeys: s.Out.GroupKeys,
		Seed: s.Out.Seed, TaskIndex: int64(s.Out.TaskIndex)}, Join: joinProto(s.Join), Shared: int64(s.Shared)}
	if r := s.Read; r != nil {
		m.Read = &atollpb.DataRead{Kind: r.Kind, Start: r.Start, End: r.End, Path: r.Path, RowGroups: make([]int64, len(r.RowGroups)),
			Columns: r.Columns}
		for i, g := range r.RowGroups {
			m.Read.RowGroups[i] = int64(g)
		}
		m.Read.Schema, m.Read.Delimiter, m.Read.Nulls = r.Schema, r.CSV.Delimiter, r.CSV.Nulls
	}
	if z := s.Zip; z != nil {
		m.Zip = &atollpb.DataZip{Skip: z.Skip, Rows: z.Rows}
	}
	for i, o := range s.Ops {
		m.Ops[i] = &atollpb.DataOp{Kind: o.Kind, Func: o.Fn, BatchSize: int64(o.BatchSize), Columns: o.Columns, Column: o.Column,
			Limit: o.Limit, Offset: o.Offset, Path: o.Path, Checked: o.Checked,
			Fraction: o.Fraction, Seed: o.Seed}
		for _, e := range o.Exprs {
			m.Ops[i].Exprs = append(m.Ops[i].Exprs, e.Proto())
		}
		m.Ops[i].Join = joinProto(o.Join)
	}
	for _, k := range s.Out.Keys {
		m.Out.Keys = append(m.Out.Keys, &atollpb.DataSortKey{Column: k.Column, Descending: k.Descending})
	}
	for _, a := range s.Out.Aggs {
		in, _ := a.Input()
		m.Out.Aggs = append(m.Out.Aggs, &atollpb.DataAgg{Func: a.Func(), Input: in.Proto(), Name: a.Name()})
	}
	b, err := proto.Marshal(m)
	if err != nil {
		panic("data: a task spec does not marshal: " + err.Error()) // plain fields: cannot happen
	}
	return b
}

// decodeTask unmarshals and checks a task's spec.
func decodeTask(b []byte) (*taskSpec, error) {
	var m atollpb.DataTask
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, errs.Malformedf(specWhat, "%v", err)
	}
	if err := checkTask(&m); err != nil {
		return nil, err
	}
	s := &taskSpec{}
	if r := m.Read; r != nil {
		s.Read = &readSpec{Kind: r.Kind, Start: r.Start, End: r.End, Path: r.Path, Columns: r.Columns}
		for _, g := range r.RowGroups {
			s.Read.RowGroups = append(s.Read.RowGroups, int(g))
		}
		s.Read.Schema, s.Read.CSV = r.Schema, csvDialect{Delimiter: r.Delimiter, Nulls: r.Nulls}
	}
	if z := m.Zip; z != nil {
		s.Zip = &zipSpec{Skip: z.Skip, Rows: z.Rows}
	}
	if len(m.Ops) > 0 {
		s.Ops = make([]opSpec, len(m.Ops))
	}
	for i, o := range m.Ops {
		s.Ops[i] = opSpec{Kind: o.Kind, Fn: o.Func, BatchSize: int(o.BatchSize), Columns: o.Columns, Column: o.Column,
			Limit: o.Limit, Offset: o.Offset, Path: o.Path, Checked: o.Checked,
			Fraction: o.Fraction, Seed: o.Seed}
		for _, pe := range o.Exprs {
			e, err := expr.FromProto(pe)
			if err != nil {
				return nil, err
			}
			s.Ops[i].Exprs = append(s.Ops[i].Exprs, e)
		}
		s.Ops[i].Join = joinFrom(o.Join)
	}
	s.Join, s.Shared = joinFrom(m.Join), int(m.Shared)
	o := m.Out
	s.Out = outSpec{Kind: o.Kind, MaxBlocks: int(o.MaxBlocks), TargetMaxBlockSize: o.TargetMaxBlockSize,
		Samples: int(o.Samples), Parts: int(o.Parts), Bounds: o.Bounds, GroupKeys: o.GroupKeys, Seed: o.Seed, TaskIndex: int(o.TaskIndex)}
	for _, k := range o.Keys {
		s.Out.Keys = append(s.Out.Keys, SortKey{Column: k.Column, Descending: k.Descending})
	}
	for _, a := range o.Aggs {
		var in expr.Expr
		if a.Input != nil {
			var err error
			if in, err = expr.FromProto(a.Input); err != nil {
				return nil, err
			}
		}
		s.Out.Aggs = append(s.Out.Aggs, expr.NewAgg(a.Func, in, a.Name))
	}
	return s, nil
}

// checkTask checks what a task relies on: known kinds, the names an
// operation needs, counts and offsets in range.
func checkTask(m *atollpb.DataTask) error {
	bad := func(format string, args ...any) error { return errs.Malformedf(specWhat, format, args...) }
	if r := m.Read; r != nil {
		switch {
		case !readKinds[r.Kind]:
			return bad("unknown read %q", clipName(r.Kind))
		case r.Start < 0 || r.End < r.Start:
			return bad("range %d to %d", r.Start, r.End)
		case len(r.Path) > maxString || len(r.RowGroups) > maxNames || len(r.Columns) > maxNames:
			return bad("a read of %d bytes of path and %d row groups", len(r.Path), len(r.RowGroups))
		}
		switch r.Kind {
		case "csv":
			if err := (csvDialect{Delimiter: r.Delimiter, Nulls: r.Nulls}).check(); err != nil {
				return bad("a CSV read with %v", err)
			}
			if _, err := csvFieldsOf(r.Schema); err != nil {
				return err
			}
		case "json":
			if _, err := jsonSchemaOf(r.Schema); err != nil {
				return err
			}
		}
		for _, g := range r.RowGroups {
			if g < 0 || g > 1<<31 {
				return bad("row group %d", g)
			}
		}
	}
	if z := m.Zip; z != nil && (z.Skip < 0 || z.Rows < 0) {
		return bad("zip of rows %d+%d", z.Skip, z.Rows)
	}
	if len(m.Ops) > maxOps {
		return bad("%d operations", len(m.Ops))
	}
	for i, o := range m.Ops {
		fn, known := opKinds[o.GetKind()]
		switch {
		case !known:
			return bad("operation %d: unknown kind %q", i, clipName(o.GetKind()))
		case fn && (o.Func == "" || len(o.Func) > maxString):
			return bad("operation %d (%s): a function name of %d bytes", i, o.Kind, len(o.Func))
		case o.BatchSize < 0 || o.Limit < 0 || o.Offset < 0:
			return bad("operation %d (%s): batch size %d, limit %d, offset %d", i, o.Kind, o.BatchSize, o.Limit, o.Offset)
		case len(o.Columns) > maxNames || len(o.Column) > maxString || len(o.Path) > maxString:
			return bad("operation %d (%s): %d columns", i, o.Kind, len(o.Columns))
		case (o.Kind == "select" || o.Kind == "drop") && len(o.Columns) == 0,
			o.Kind == "add_column" && o.Column == "",
			(o.Kind == "write_parquet" || o.Kind == "write_csv" || o.Kind == "write_json") && o.Path == "",
			(o.Kind == "where" || o.Kind == "with_column") && len(o.Exprs) != 1,
			o.Kind == "with_column" && o.Column == "",
			o.Kind == "project" && len(o.Exprs) == 0,
			o.Kind == "join_probe" && o.Join == nil,
			len(o.Exprs) > maxNames:
			return bad("operation %d (%s) without its columns, path or expressions", i, o.Kind)
		}
		if f := o.Fraction; o.Kind == "sample" && !(f >= 0 && f <= 1) {
			return bad("operation %d (sample): fraction %v", i, f)
		}
		if o.Kind == "rename" {
			if err := checkRenames(o.Columns); err != nil {
				return bad("operation %d (rename): %v", i, err)
			}
		}
		if err := checkJoin(o.Join); err != nil {
			return err
		}
	}
	if err := checkJoin(m.Join); err != nil {
		return err
	}
	if m.Shared < 0 || m.Shared > maxReturns {
		return bad("%d shared arguments", m.Shared)
	}
	o := m.Out
	if o == nil || !outKinds[o.Kind] {
		return bad("unknown output %q", clipName(o.GetKind()))
	}
	partitioned := (&outSpec{Kind: o.Kind}).partitioned()
	metaOnly := (&outSpec{Kind: o.Kind}).metaOnly()
	switch {
	case metaOnly && (o.MaxBlocks != 0 || o.Parts != 0):
		return bad("%s with %d blocks, %d parts", o.Kind, o.MaxBlocks, o.Parts)
	case partitioned && (o.Parts < 1 || o.Parts > maxReturns):
		return bad("%s into %d parts", o.Kind, o.Parts)
	case !partitioned && !metaOnly && (o.MaxBlocks < 1 || o.MaxBlocks > maxReturns):
		return bad("%s of at most %d blocks", o.Kind, o.MaxBlocks)
	case o.TargetMaxBlockSize < 0 || o.Samples < 0 || o.Samples > maxSamples || o.TaskIndex < 0:
		return bad("%s: target block size %d, %d samples, task index %d", o.Kind, o.TargetMaxBlockSize, o.Samples, o.TaskIndex)
	case len(o.Keys) > maxNames || len(o.GroupKeys) > maxNames || len(o.Aggs) > maxNames:
		return bad("%s: %d keys, %d group keys, %d aggregations", o.Kind, len(o.Keys), len(o.GroupKeys), len(o.Aggs))
	case o.Kind == "hash_split" && len(o.GroupKeys) == 0:
		return bad("%s without keys", o.Kind)
	}
	for _, k := range o.Keys {
		if k == nil || k.Column == "" {
			return bad("%s: a sort key without a column", o.Kind)
		}
	}
	for _, a := range o.Aggs {
		if a == nil || !aggFuncs[a.Func] || a.Func != "count" && a.Input == nil || a.Name == "" || len(a.Name) > maxString {
			return bad("%s: aggregation %v", o.Kind, a)
		}
	}
	return nil
}

// encodeMeta marshals a task's metadata.
func encodeMeta(m *taskMeta) ([]byte, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, errs.Invalidf("data: encode task metadata: %v", err)
	}
	return b, nil
}

// decodeMeta unmarshals and checks the metadata of a task that returned
// blocks block objects after it.
func decodeMeta(b []byte, blocks int) (*taskMeta, error) {
	m := &taskMeta{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, errs.Malformedf(metaWhat, "%v", err)
	}
	if len(m.Rows) != len(m.Bytes) || len(m.Rows) > blocks {
		return nil, errs.Malformedf(metaWhat, "rows of %d blocks, bytes of %d, for a task of %d block returns", len(m.Rows), len(m.Bytes), blocks)
	}
	for i := range m.Rows {
		if m.Rows[i] < 0 || m.Bytes[i] < 0 {
			return nil, errs.Malformedf(metaWhat, "block %d of %d rows and %d bytes", i, m.Rows[i], m.Bytes[i])
		}
	}
	if m.Attempt < 0 || m.WallNs < 0 {
		return nil, errs.Malformedf(metaWhat, "attempt %d, wall time %d ns", m.Attempt, m.WallNs)
	}
	return m, nil
}

// clipName bounds a name from the wire quoted in an error.
func clipName(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}

// joinProto is a join as a message (nil for none).
func joinProto(j *joinSpec) *atollpb.DataJoin {
	if j == nil {
		return nil
	}
	return &atollpb.DataJoin{How: j.How, LeftKeys: j.LeftKeys, RightKeys: j.RightKeys, Suffix: j.Suffix, BuildKey: j.BuildKey,
		SharedFrom: int64(j.SharedFrom), SharedTo: int64(j.SharedTo), Left: int64(j.Left), EmitUnmatchedBuild: j.EmitUnmatchedBuild,
		ReportMatched: j.ReportMatched, Matched: j.Matched, UnmatchedOnly: j.UnmatchedOnly, LeftSchema: j.LeftSchema,
		ReportLeftMatched: j.ReportLeftMatched, LeftRest: j.LeftRest, LeftMatched: j.LeftMatched, RightSchema: j.RightSchema,
		LazyRight: j.LazyRight}
}

// joinFrom is a checked message's join (nil for none).
func joinFrom(m *atollpb.DataJoin) *joinSpec {
	if m == nil {
		return nil
	}
	return &joinSpec{How: m.How, LeftKeys: m.LeftKeys, RightKeys: m.RightKeys, Suffix: m.Suffix, BuildKey: m.BuildKey,
		SharedFrom: int(m.SharedFrom), SharedTo: int(m.SharedTo), Left: int(m.Left), EmitUnmatchedBuild: m.EmitUnmatchedBuild,
		ReportMatched: m.ReportMatched, Matched: m.Matched, UnmatchedOnly: m.UnmatchedOnly, LeftSchema: m.LeftSchema,
		ReportLeftMatched: m.ReportLeftMatched, LeftRest: m.LeftRest, LeftMatched: m.LeftMatched, RightSchema: m.RightSchema,
		LazyRight: m.LazyRight}
}

// checkJoin checks a join from the wire (nil: none).
func checkJoin(m *atollpb.DataJoin) error {
	if m == nil {
		return nil
	}
	bad := func(format string, args ...any) error { return errs.Malformedf(specWhat, format, args...) }
	switch {
	case !joinHows[m.How]:
		return bad("a join of kind %q", clipName(m.How))
	case len(m.LeftKeys) == 0 || len(m.LeftKeys) != len(m.RightKeys) || len(m.LeftKeys) > maxNames:
		return bad("a join on %d and %d keys", len(m.LeftKeys), len(m.RightKeys))
	case m.SharedFrom < 0 || m.SharedTo < m.SharedFrom || m.SharedTo > maxReturns || m.Left < 0 || m.Left > maxReturns:
		return bad("a join of shared arguments %d to %d, %d left inputs", m.SharedFrom, m.SharedTo, m.Left)
	case len(m.Suffix) > maxString || len(m.BuildKey) > maxString:
		return bad("a join's suffix or key of %d and %d bytes", len(m.Suffix), len(m.BuildKey))
	case m.LeftRest && (m.UnmatchedOnly || m.ReportLeftMatched || m.ReportMatched || m.EmitUnmatchedBuild || m.LazyRight):
		return bad("a join task of the left's rest that also joins")
	case m.LeftRest && (m.How == "inner" || m.How == "right"):
		return bad("the left's rest of a %s join", m.How)
	}
	return nil
}
