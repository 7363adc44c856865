package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// taskSpec is what one task of a fused stage does, sent as its first
// argument: read (or take its input blocks, the other arguments), apply
// the ops in order, then shape the output (out).
type taskSpec struct {
	Read *readSpec
	Zip  *zipSpec
	Ops  []opSpec
	Out  outSpec
	// Join: a shuffled join's task (join_exec.go)
	Join *joinSpec
	// Shared: the last Shared arguments are blocks every task of the
	// stage takes (a broadcast join's right side)
	Shared int
}

// opSpec is one map-like operation as a task runs it.
type opSpec struct {
	Kind      string // map, map_batches, flat_map, filter, select, drop, rename, sample, add_column, limit, write_parquet, write_csv, write_json, where, with_column, project
	Fn        string // a registered function's name
	BatchSize int
	Columns   []string // select, drop: the columns; rename: old and new names in turn
	Column    string
	Limit     int64  // limit: rows to keep from this task's input
	Offset    int64  // limit: rows to skip first (Split's slices)
	Path      string // write_parquet, write_csv, write_json: the file to write
	// where: the condition; with_column: the column's values; project:
	// the columns
	Exprs []expr.Expr
	// join_probe: a broadcast join
	Join *joinSpec
	// rename: checked against the plan's schema, so a column the read
	// left out is skipped
	Checked bool
	// sample: each row kept with probability Fraction, drawn from rng
	// (seeded by Seed and the task's index when the task starts)
	Fraction float64
	Seed     uint64
	rng      *rand.PCG
}

// outSpec is how a task returns its rows.
type outSpec struct {
	// Kind: "blocks" (split above TargetMaxBlockSize into at most
	// MaxBlocks), "sort_sample" (blocks plus Samples rows of the Keys
	// columns), "key_sample" (no block: only the metadata, with Samples
	// rows of the Keys columns), "split" (Parts returns: sort ranges of Keys by Bounds, or
	// equal row ranges when Keys is empty), "merge_sort" (the inputs
	// concatenated, sorted by Keys, then split as blocks); "agg_map",
	// "agg_split", "agg_reduce" (groupby.go), "shuffle_map", "shuffle_reduce"
	// (shuffle.go).
	Kind               string
	MaxBlocks          int
	TargetMaxBlockSize int64
	Keys               []SortKey
	Samples            int
	Parts              int
	Bounds             []byte // an IPC block of the key columns: the P-1 range bounds
	GroupKeys          []string
	Aggs               []Agg
	Seed               uint64
	TaskIndex          int // the task's place in its stream (set at submit)
}

// numReturns is the task's return count: the metadata, then the blocks.
func (o outSpec) numReturns() int {
	if o.metaOnly() {
		return 1
	}
	if o.partitioned() {
		return 1 + o.Parts
	}
	return 1 + o.MaxBlocks
}

// metaOnly says whether the task returns its metadata and no block.
func (o outSpec) metaOnly() bool { return o.Kind == "key_sample" }

// partitioned says whether the task returns exactly Parts blocks (a map
// side of an all-to-all), rather than at most MaxBlocks.
func (o outSpec) partitioned() bool {
	return o.Kind == "split" || o.Kind == "agg_map" || o.Kind == "agg_split" || o.Kind == "shuffle_map" || o.Kind == "hash_split"
}

var execTask = atoll.NewMultiFuncN("atoll/data.exec", execSpec)

// execSpec runs a task: args[0] is the task spec, the rest its input
// blocks; it returns the metadata, then the blocks.
func execSpec(ctx context.Context, args []atoll.Raw) ([]atoll.Raw, error) {
	if len(args) == 0 {
		return nil, errs.Malformedf(specWhat, "a task without arguments")
	}
	spec, err := decodeTask(args[0].Data)
	if err != nil {
		return nil, err
	}
	start, cpu0 := time.Now(), cpuTime()
	// The task's kernels and reads build their columns from the pool,
	// which takes them back as they are released.
	ctx = compute.WithAllocator(ctx, arrowPool)
	meta, blocks, err := runTask(ctx, spec, args[1:])
	if err != nil {
		return nil, err
	}
	meta.WallNs, meta.CpuNs = time.Since(start).Nanoseconds(), (cpuTime() - cpu0).Nanoseconds()
	meta.Attempt = int32(atoll.CurrentAttempt(ctx))
	mb, err := encodeMeta(meta)
	if err != nil {
		return nil, err
	}
	out := make([]atoll.Raw, spec.Out.numReturns())
	out[0] = atoll.Raw{Codec: atollpb.Codec_CODEC_PROTO, Data: mb}
	for i := 1; i < len(out); i++ {
		out[i] = atoll.Raw{Codec: atollpb.Codec_CODEC_BYTES, Data: []byte{}}
		if i-1 < len(blocks) {
			out[i].Data = blocks[i-1]
		}
	}
	return out, nil
}

// cpuTime is this process's CPU time (user and system). A worker process
// runs one task at a time, so the difference across a task is the task's
// CPU time; with in-process workers it counts every task running at once.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runTask runs spec over the input blocks (views of shared memory, read
// in place) and returns the metadata and encoded output blocks.
func runTask(ctx context.Context, spec *taskSpec, inputs []atoll.Raw) (*taskMeta, [][]byte, error) {
	var recs []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	if spec.Shared < 0 || spec.Shared > len(inputs) {
		return nil, nil, errs.Malformedf(specWhat, "%d shared arguments of %d", spec.Shared, len(inputs))
	}
	shared := inputs[len(inputs)-spec.Shared:]
	inputs = inputs[:len(inputs)-spec.Shared]
	for i, op := range spec.Ops {
		if op.Kind == "sample" { // one stream of draws for the task's rows
			spec.Ops[i].rng = rand.NewPCG(op.Seed, uint64(spec.Out.TaskIndex))
		}
	}
	var matched joinMatches
	var inSchema *arrow.Schema
	if spec.Join != nil {
		out, m, err := runJoinTask(ctx, spec.Join, inputs)
		if err != nil {
			return nil, nil, err
		}
		recs, matched, inputs = out, m, nil
		if len(recs) > 0 {
			inSchema = recs[0].Schema()
		}
	}
	var readBytes int64
	ops := spec.Ops
	if spec.Read != nil {
		var err error
		if streamed(spec, len(inputs)) {
			// each batch read goes through the ops before the next is
			// read: a task holds a batch's worth of intermediates, not a
			// row group's
			var opErr error
			readBytes, err = spec.Read.each(ctx, func(rec arrow.RecordBatch) error {
				out, err := applyOps(ctx, ops, rec, shared)
				if err != nil {
					opErr = err
					return err
				}
				recs = append(recs, out...)
				return nil
			})
			if opErr != nil {
				return nil, nil, opErr
			}
			ops = nil
		} else {
			recs, readBytes, err = spec.Read.read(ctx)
		}
		if err != nil && errors.Is(err, ErrTransient) {
			// the last attempt's error is the run's: say it was retried
			return nil, nil, fmt.Errorf("%w (attempt %d of %d)", err, atoll.CurrentAttempt(ctx)+1, 1+readRetries)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if spec.Zip != nil {
		rec, err := zipInputs(ctx, spec.Zip, inputs)
		if err != nil {
			return nil, nil, err
		}
		recs, inSchema, inputs = append(recs, rec), rec.Schema(), nil
	}
	for _, in := range inputs {
		rec, err := decodeBlock(in.Data)
		if err != nil {
			return nil, nil, err
		}
		inSchema = rec.Schema()
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		recs = append(recs, rec)
	}
	for _, op := range ops {
		next, err := applyOp(ctx, op, recs, shared)
		releaseAll(recs)
		recs = next
		if err != nil {
			return nil, nil, err
		}
	}
	schema := inSchema
	if len(recs) > 0 {
		schema = recs[0].Schema()
	}
	if schema == nil {
		schema = arrow.NewSchema(nil, nil)
	}
	meta := &taskMeta{Schema: encodeSchema(schema), ReadBytes: readBytes, Matched: matched.right, LeftMatched: matched.left}
	var parts []arrow.RecordBatch
	defer func() { releaseAll(parts) }()
	switch spec.Out.Kind {
	case "blocks", "sort_sample":
		if spec.Out.Kind == "sort_sample" {
			s, err := sampleKeys(ctx, recs, spec.Out.Keys, spec.Out.Samples)
			if err != nil {
				return nil, nil, err
			}
			meta.Samples = s
		}
		parts = splitBlocks(recs, spec.Out.TargetMaxBlockSize, spec.Out.MaxBlocks)
	case "key_sample":
		s, err := sampleKeys(ctx, recs, spec.Out.Keys, spec.Out.Samples)
		if err != nil {
			return nil, nil, err
		}
		meta.Samples = s
	case "split":
		var err error
		if parts, err = splitParts(ctx, schema, recs, &spec.Out); err != nil {
			return nil, nil, err
		}
	case "merge_sort":
		sorted, err := sortRecords(ctx, schema, recs, spec.Out.Keys)
		if err != nil {
			return nil, nil, err
		}
		parts = splitBlocks([]arrow.RecordBatch{sorted}, spec.Out.TargetMaxBlockSize, spec.Out.MaxBlocks)
		sorted.Release()
	default:
		var err error
		if parts, err = shapeOutput(ctx, schema, recs, &spec.Out); err != nil {
			return nil, nil, err
		}
	}
	// the parts hold what they need of the input (copies, or slices
	// they retain): its columns go back to the pool before the parts are
	// encoded, and each part's once it is
	releaseAll(recs)
	recs = nil
	for _, p := range parts {
		if p.Schema().NumFields() > 0 {
			// the blocks' schema is the output's: an aggregate's reduce
			// makes its final columns of partial states
			meta.Schema = encodeSchema(p.Schema())
			break
		}
	}
	blocks := make([][]byte, len(parts))
	for i, p := range parts {
		if p.NumRows() == 0 && p.Schema().NumFields() == 0 {
			p = emptyRecord(schema)
			parts[i].Release()
			parts[i] = p
		}
		b, err := encodeBlock(p)
		if err != nil {
			return nil, nil, err
		}
		blocks[i] = b
		meta.Rows = append(meta.Rows, p.NumRows())
		meta.Bytes = append(meta.Bytes, int64(len(b)))
		p.Release()
		parts[i] = nil
	}
	return meta, blocks, nil
}

// streamed says whether a task's ops run on its read batch by batch
// (applyOps), as the read goes: a read with no other input whose ops
// each take one record at a time (no op sees a batch's neighbours, nor
// its size), and whose output is smaller than its input (a filter, or
// an output kind other than blocks: aggregates, partitions) so that
// joining the batches' outputs (splitBlocks) costs little.
func streamed(spec *taskSpec, inputs int) bool {
	if spec.Read == nil || spec.Join != nil || spec.Zip != nil || inputs > 0 || len(spec.Ops) == 0 {
		return false
	}
	filters := false
	for _, op := range spec.Ops {
		switch op.Kind {
		case "where", "filter", "sample":
			filters = true
		case "with_column", "project", "select", "drop", "rename", "map":
		default:
			return false
		}
	}
	switch spec.Out.Kind {
	case "blocks", "sort_sample", "merge_sort":
		return filters
	}
	return true
}

// applyOps applies ops in turn to rec (which it does not release) and
// returns the records of the last.
func applyOps(ctx context.Context, ops []opSpec, rec arrow.RecordBatch, shared []atoll.Raw) ([]arrow.RecordBatch, error) {
	rec.Retain()
	recs := []arrow.RecordBatch{rec}
	for _, op := range ops {
		next, err := applyOp(ctx, op, recs, shared)
		releaseAll(recs)
		recs = next
		if err != nil {
			releaseAll(recs)
			return nil, err
		}
	}
	return recs, nil
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
}

// applyOp applies one op to a task's records; it does not release recs.
// shared are the arguments every task of the stage takes.
func applyOp(ctx context.Context, op opSpec, recs []arrow.RecordBatch, shared []atoll.Raw) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	fail := func(err error) ([]arrow.RecordBatch, error) {
		releaseAll(out)
		return nil, err
	}
	switch op.Kind {
	case "map_batches":
		f, err := errs.Lookup(batchFuncs, op.Fn)
		if err != nil {
			return nil, err
		}
		for _, b := range rebatch(recs, op.BatchSize) {
			var r arrow.RecordBatch
			err := guard(op, func() (err error) {
				r, err = f.fn(ctx, b)
				return err
			})
			if r != b { // a function may return its argument (BatchFunc)
				b.Release()
			}
			if err != nil {
				return fail(err)
			}
			out = append(out, r)
		}
	case "map":
		f, err := errs.Lookup(rowFuncs, op.Fn)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			rows := recordRows(rec)
			err := guard(op, func() (err error) {
				for i, r := range rows {
					if rows[i], err = f.fn(ctx, r); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return fail(err)
			}
			s, err := rowSchema(rows, rec.Schema())
			if err != nil {
				return fail(err)
			}
			nr, err := rowsRecord(s, rows)
			if err != nil {
				return fail(err)
			}
			out = append(out, nr)
		}
	case "filter":
		f, err := errs.Lookup(predicates, op.Fn)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			mask := array.NewBooleanBuilder(memory.DefaultAllocator)
			err := guard(op, func() error {
				for _, r := range recordRows(rec) {
					keep, err := f.fn(ctx, r)
					if err != nil {
						return err
					}
					mask.Append(keep)
				}
				return nil
			})
			if err != nil {
				mask.Release()
				return fail(err)
			}
			m := mask.NewBooleanArray()
			mask.Release()
			nr, err := filterRecord(ctx, rec, m)
			m.Release()
			if err != nil {
				return fail(err)
			}
			out = append(out, nr)
		}
	case "sample":
		for _, rec := range recs {
			nr, err := sampleRecord(ctx, rec, op.Fraction, op.rng)
			if err != nil {
				return fail(err)
			}
			out = append(out, nr)
		}
	case "select", "drop":
		for _, rec := range recs {
			nr, err := projectRecord(rec, op.Columns, op.Kind == "drop")
			if err != nil {
				return fail(err)
			}
			out = append(out, nr)
		}
	case "rename":
		for _, rec := range recs {
			pairs := op.Columns
			if op.Checked { // a column the read left out: nothing after uses it
				pairs = presentRenames(rec.Schema(), pairs)
			}
			s, err := renameSchema(rec.Schema(), pairs)
			if err != nil {
				return fail(err)
			}
			out = append(out, array.NewRecordBatch(s, rec.Columns(), rec.NumRows()))
		}
	case "add_column":
		f, err := errs.Lookup(columnFuncs, op.Fn)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			var col arrow.Array
			err := guard(op, func() (err error) {
				col, err = f.fn(ctx, rec)
				return err
			})
			if err != nil {
				return fail(err)
			}
			if int64(col.Len()) != rec.NumRows() {
				col.Release()
				return fail(fmt.Errorf("%w: data: add_column %s: %d values for %d rows", atoll.ErrInvalidArgument, op.Fn, col.Len(), rec.NumRows()))
			}
			out = append(out, withColumn(rec, op.Column, col))
			col.Release()
		}
	case "limit":
		skip, left := op.Offset, op.Limit
		for _, rec := range recs {
			if left <= 0 {
				break
			}
			if skip >= rec.NumRows() {
				skip -= rec.NumRows()
				continue
			}
			n := min(left, rec.NumRows()-skip)
			out = append(out, rec.NewSlice(skip, skip+n))
			left, skip = left-n, 0
		}
	case "write_parquet":
		if err := writeParquetFile(ctx, op.Path, recs); err != nil {
			return nil, err
		}
	case "write_csv":
		if err := writeCSVFile(op.Path, recs); err != nil {
			return nil, err
		}
	case "write_json":
		if err := writeJSONFile(op.Path, recs); err != nil {
			return nil, err
		}
	case "flat_map":
		return applyFlatMap(ctx, op, recs)
	case "where", "with_column", "project":
		return applyExprOp(ctx, op, recs)
	case "join_probe":
		if op.Join == nil {
			return nil, errs.Malformedf(specWhat, "a join_probe without its join")
		}
		return applyJoinProbe(ctx, op, recs, shared)
	case "map_batches_class":
		return applyClass(ctx, op, recs)
	default:
		return nil, errs.Malformedf(specWhat, "unknown operation %q", op.Kind)
	}
	return out, nil
}

// guard runs body, which calls op's registered function: the error body
// returns, or a panic of the function, becomes a FunctionError naming
// the function and the operation.
func guard(op opSpec, body func() error) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("data: %w", err)
		}
	}()
	defer errs.RecoverFunction(&err, op.Kind, op.Fn, "")
	if err := body(); err != nil {
		return errs.FunctionFailed(op.Kind, op.Fn, "", err)
	}
	return nil
}

// writeParquetFile writes recs to path (through a temporary file renamed
// at the end, so a retried task leaves no half file).
func writeParquetFile(ctx context.Context, path string, recs []arrow.RecordBatch) error {
	return writeFileAtomic(path, recs, func(f io.Writer) error {
		return writeParquet(ctx, struct{ io.Writer }{f}, recs) // the writer closes a Closer: keep f for Close
	})
}

// writeFileAtomic writes recs (none: no file) to path with write, through
// a temporary file renamed at the end, so a retried task leaves no half
// file. Its errors are FileErrors.
func writeFileAtomic(path string, recs []arrow.RecordBatch, write func(io.Writer) error) error {
	if len(recs) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fileError("write", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fileError("write", path, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fileError("write", path, err)
	}
	return nil
}
