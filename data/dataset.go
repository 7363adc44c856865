package data

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
)

// Config holds the execution settings of a dataset (Ray's DatasetContext).
type Config struct {
	// TargetMaxBlockSize: a task splits its output into blocks of at most
	// this many bytes. Default 512 MiB (as Ray Datasets): blocks that large keep
	// task counts low while a worker holds only a few in memory. A run
	// takes at most a quarter of the object store, whatever is set: a
	// block is one object, which the store must hold whole.
	TargetMaxBlockSize int64
	// MemoryBudget bounds the bytes a run keeps in flight: the inputs and
	// expected outputs of running tasks plus blocks produced and not yet
	// consumed. Zero means BudgetFraction of the object store.
	MemoryBudget int64
	// BudgetFraction of the object store's capacity is the budget when
	// MemoryBudget is zero. Default 0.25: a quarter leaves room for the
	// all-to-all phases and for other work sharing the store.
	BudgetFraction float64
	// Parallelism is the number of read tasks of Range. Default 16.
	Parallelism int
	// CPUShare, when above zero, is the share of the driver's node's CPUs
	// the run's tasks may hold at once (and its pools' actors, by their
	// resources): the driver submits no task past it, except that every
	// stage may always run one. It is a cap that leaves the rest to other
	// work, not a reservation: atoll's scheduler reserves nothing, so
	// work submitted before the run's tasks (or long tasks) may still
	// hold every CPU and the run waits (see CPUWaitWarning). Default 0:
	// no cap. Only the driver's node is counted.
	CPUShare float64
	// CPUWaitWarning: a stage whose tasks have waited this long for a
	// CPU held by other work is reported: a warning on Logger, once per
	// stage and run, and a line in Stats. Zero means 30 s; negative
	// turns the check off.
	CPUWaitWarning time.Duration
	// Logger receives a run's warnings. Nil means slog.Default().
	Logger *slog.Logger
	// Progress receives a line per stage (blocks done, in flight, rows),
	// redrawn at most every ProgressInterval while a run goes and once
	// at its end; on a terminal the lines are redrawn in place. Nil
	// means stderr when it is a terminal, else no progress; io.Discard
	// turns it off.
	Progress io.Writer
	// ProgressInterval: zero means 500 ms.
	ProgressInterval time.Duration
	// NoPushdown makes a Parquet read take every column and row group,
	// whatever the plan uses (to measure what the pushdown saves).
	NoPushdown bool
	// NoOverlap makes a GroupBy plan its parts before any map task runs
	// and cut its oversized parts for their reduce tasks only after every
	// map task has finished, instead of sizing the parts by the first map
	// task's output and cutting parts as they fill while the maps run (to
	// measure what those save).
	NoOverlap bool
	// BroadcastThreshold: a Join broadcasts its right side when the
	// right is estimated below this many bytes (and at most half the
	// run's budget) and the join keeps no unmatched right row. Default
	// 64 MiB: a table that small is cheaper sent to every task than
	// shuffled with the left.
	BroadcastThreshold int64
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{TargetMaxBlockSize: 512 << 20, BudgetFraction: 0.25, Parallelism: 16, BroadcastThreshold: 64 << 20}
}

func (c Config) validate() error {
	if c.TargetMaxBlockSize <= 0 || c.MemoryBudget < 0 || c.BudgetFraction < 0 || c.BudgetFraction > 1 || c.Parallelism <= 0 ||
		c.CPUShare < 0 || c.CPUShare > 1 || c.ProgressInterval < 0 || c.BroadcastThreshold < 0 {
		return fmt.Errorf("%w: data: bad Config %+v", atoll.ErrInvalidArgument, c)
	}
	if c.MemoryBudget == 0 && c.BudgetFraction == 0 {
		return fmt.Errorf("%w: data: Config needs MemoryBudget or BudgetFraction", atoll.ErrInvalidArgument)
	}
	return nil
}

// Dataset is a lazy, immutable sequence of Arrow blocks: operations
// return a new Dataset and run nothing; consuming it (Count, Iter,
// TakeAll, WriteParquet, Materialize...) plans and executes it.
type Dataset struct {
	ops    []*logicalOp
	source *source
	cfg    Config
	err    error
	// last holds the stats of this dataset's last run.
	last *lastRun
}

type lastRun struct {
	mu     sync.Mutex
	stages []*stageStats
	peak   int64
}

// source is where a dataset's rows come from: read tasks made at run
// time, or blocks already in the store.
type source struct {
	// open prepares a read for one run (lists files, reads footers)
	open   func(cfg Config) (readSource, error)
	blocks []block
	// inputs starts other datasets within a run: a union's stream of
	// blocks, or a zip's units (union.go), and their schema if the plan
	// knows it
	inputs func(ctx context.Context, r *run) (blockStream, unitSource, *arrow.Schema, error)
}

func newDataset(src *source, name string, err error) *Dataset {
	return &Dataset{source: src, ops: []*logicalOp{{name: name, kind: kindRead}}, cfg: DefaultConfig(), err: err, last: &lastRun{}}
}

func (d *Dataset) with(o *logicalOp) *Dataset {
	nd := *d
	nd.ops = append(append([]*logicalOp(nil), d.ops...), o)
	nd.last = &lastRun{}
	return &nd
}

func (d *Dataset) withErr(err error) *Dataset {
	nd := *d
	if nd.err == nil {
		nd.err = err
	}
	return &nd
}

// Err returns the first error of building the dataset (a bad argument),
// also returned by every consumer.
func (d *Dataset) Err() error { return d.err }

// WithConfig returns the dataset with execution settings c.
func (d *Dataset) WithConfig(c Config) *Dataset {
	nd := *d
	nd.cfg = c
	if err := c.validate(); err != nil && nd.err == nil {
		nd.err = err
	}
	return &nd
}

// Range is a dataset of one int64 column "id" holding 0..n-1, read by
// Config.Parallelism tasks.
func Range(n int64) *Dataset {
	if n < 0 {
		return newDataset(&source{}, "read", fmt.Errorf("%w: data: Range(%d)", atoll.ErrInvalidArgument, n))
	}
	return newDataset(&source{open: func(cfg Config) (readSource, error) {
		return &rangeSource{n: n, parallelism: int64(cfg.Parallelism)}, nil
	}}, "read", nil)
}

// ReadParquet reads Parquet files (paths of files or of directories,
// whose *.parquet files are read), one task per row group. The driver
// reads the files' footers when the dataset runs: the schema its
// operations are checked against (the first file's), and the pushdown:
// each task reads only the columns the plan uses, and a row group whose
// statistics rule out a Filter's condition is not read (Stats shows
// both).
func ReadParquet(paths ...string) *Dataset {
	return newDataset(&source{open: func(Config) (readSource, error) {
		files, err := openParquet(paths)
		if err != nil {
			return nil, err
		}
		return &parquetSource{files: files}, nil
	}}, "read", nil)
}

// ReadCSV reads CSV files with a header line (paths of files or of
// directories, whose *.csv files are read), one task per file. Every
// file must have the same columns, in the same order. The columns' types
// are inferred when the dataset runs, before any task, from the first
// MiB of every file: each column is the narrowest of int64, float64,
// bool, date32, timestamp[ns] and string that holds every value seen in
// any file (an empty value is a null; a column of nulls only is a
// string), so every block has the same schema and expressions are
// checked against it before anything runs. A value further into a file
// that its column's type does not hold fails the read with a FileError
// naming the line, the column and the value. ReadCSVWith reads files
// with another delimiter or other nulls, or with given types.
func ReadCSV(paths ...string) *Dataset {
	return ReadCSVWith(CSVOptions{}, paths...)
}

// CSVOptions says how ReadCSVWith reads CSV files. Its zero value reads
// them as ReadCSV does.
type CSVOptions struct {
	// Delimiter separates a line's values; 0 is a comma. A quote, a line
	// end or an invalid rune fails the read before any task runs.
	Delimiter rune
	// Nulls are the values read as nulls, in every column; none: the empty
	// value alone (give "" among them to keep empty values null).
	Nulls []string
	// Types gives the columns it names their types, which are then not
	// inferred: a column whose values past the first MiB hold what its
	// first values do not (fractions after whole numbers), or one to keep
	// as text ("02139" as a string, not the integer 2139). Each type is
	// int64, float64, bool, date32, timestamp[ns] (with no zone or UTC)
	// or string. A name no header has, another type, or a value in the
	// first MiB that its type does not hold fails the read before any
	// task runs.
	Types map[string]arrow.DataType
}

// ReadCSVWith reads CSV files as ReadCSV does, with opts.
func ReadCSVWith(opts CSVOptions, paths ...string) *Dataset {
	return newDataset(&source{open: func(Config) (readSource, error) {
		return csvSource(paths, opts)
	}}, "read", nil)
}

// FromArrow puts records in the object store, a block each, now.
func FromArrow(ctx context.Context, recs ...arrow.RecordBatch) (*Dataset, error) {
	var bs []block
	for _, r := range recs {
		b, err := putBlock(ctx, r)
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	if len(bs) == 0 {
		return nil, fmt.Errorf("%w: data: FromArrow of no records", atoll.ErrInvalidArgument)
	}
	return newDataset(&source{blocks: bs}, "from_arrow", nil), nil
}

// FromItems builds a dataset of items: structs (a column per exported
// field, named by its `arrow` tag or its name, of the field's type; a
// pointer field's nil is a null) or maps with string keys (a column per
// key, sorted by name), values of the types Row lists (a time.Time is a
// timestamp[us, UTC]). It puts them in the store now, in blocks of at
// most Parallelism.
func FromItems[T any](ctx context.Context, items []T) (*Dataset, error) {
	rows, order, err := itemRows(items)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: data: FromItems of no items", atoll.ErrInvalidArgument)
	}
	s, err := orderedSchema(rows, order)
	if err != nil {
		return nil, err
	}
	p := min(DefaultConfig().Parallelism, len(rows))
	var recs []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	for i := range p {
		r, err := rowsRecord(s, rows[i*len(rows)/p:(i+1)*len(rows)/p])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	d, err := FromArrow(ctx, recs...)
	if d != nil {
		d.ops[0].name = "from_items"
	}
	return d, err
}

// putBlock stores rec as a block.
func putBlock(ctx context.Context, rec arrow.RecordBatch) (block, error) {
	b, err := encodeBlock(rec)
	if err != nil {
		return block{}, err
	}
	ref, err := atoll.Put(ctx, atoll.Raw{Codec: codecBytes, Data: b})
	if err != nil {
		return block{}, err
	}
	return block{ref: ref, rows: rec.NumRows(), bytes: int64(len(b)), schema: rec.Schema(), borrowed: true}, nil
}

// OpOption sets how an operation runs.
type OpOption func(*logicalOp)

// WithResources sets the resources of each task running the operation
// (default one CPU). Operations with different resources do not fuse.
func WithResources(r atoll.Resources) OpOption {
	return func(o *logicalOp) {
		m := map[string]float64{}
		if r.CPU != 0 {
			m["CPU"] = r.CPU
		}
		if r.Memory != 0 {
			m["memory"] = r.Memory
		}
		for k, v := range r.Custom {
			m[k] = v
		}
		o.resources = m
	}
}

// BatchSize sets the rows per call of a MapBatches function (default:
// each block as a whole). Batches are cut within the blocks of one task.
func BatchSize(n int) OpOption { return func(o *logicalOp) { o.op.BatchSize = n } }

func (d *Dataset) mapOp(name string, op opSpec, opts []OpOption) *Dataset {
	o := &logicalOp{name: name, kind: kindMap, op: op}
	for _, f := range opts {
		f(o)
	}
	if o.op.BatchSize < 0 {
		return d.withErr(fmt.Errorf("%w: data: batch size %d", atoll.ErrInvalidArgument, o.op.BatchSize))
	}
	if err := o.checkPool(); err != nil {
		return d.withErr(err)
	}
	return d.with(o)
}

// Map applies fn to every row.
func (d *Dataset) Map(fn *RowFunc, opts ...OpOption) *Dataset {
	if fn == nil {
		return d.withErr(fmt.Errorf("%w: data: Map(nil)", atoll.ErrInvalidArgument))
	}
	if err := registered(rowFuncs, "Map", fn.name); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("map", opSpec{Kind: "map", Fn: fn.name}, opts)
}

// AddColumn adds (or replaces) column name, computed by fn per batch.
func (d *Dataset) AddColumn(name string, fn *ColumnFunc, opts ...OpOption) *Dataset {
	if fn == nil || name == "" {
		return d.withErr(fmt.Errorf("%w: data: AddColumn needs a name and a function", atoll.ErrInvalidArgument))
	}
	if err := registered(columnFuncs, "AddColumn", fn.name); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("add_column", opSpec{Kind: "add_column", Fn: fn.name, Column: name}, opts)
}

// Select keeps the named columns, in that order.
func (d *Dataset) Select(cols ...string) *Dataset {
	if len(cols) == 0 {
		return d.withErr(fmt.Errorf("%w: data: Select of no column", atoll.ErrInvalidArgument))
	}
	return d.mapOp("select", opSpec{Kind: "select", Columns: cols}, nil)
}

// Drop removes the named columns.
func (d *Dataset) Drop(cols ...string) *Dataset {
	return d.mapOp("drop", opSpec{Kind: "drop", Columns: cols}, nil)
}

// RenameColumns renames columns, old name to new, keeping their order
// and values (no copy), as Ray Data's rename_columns: a missing column,
// or two columns of one name after it, is an error naming them when the
// plan is built. Reads still read only the columns the rest of the plan
// uses, by their names in the file.
//
//	ds.RenameColumns(map[string]string{"amt": "amount", "ts": "time"})
func (d *Dataset) RenameColumns(names map[string]string) *Dataset {
	if len(names) == 0 {
		return d.withErr(fmt.Errorf("%w: data: RenameColumns of no column", atoll.ErrInvalidArgument))
	}
	pairs := make([]string, 0, 2*len(names))
	for _, old := range slices.Sorted(maps.Keys(names)) {
		pairs = append(pairs, old, names[old])
	}
	if err := checkRenames(pairs); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("rename", opSpec{Kind: "rename", Columns: pairs}, nil)
}

// RandomSample keeps each row with probability fraction (0 to 1), each
// drawn on its own, as Ray Data's random_sample: about that fraction of
// the rows, not exactly. The rows kept are the same for a seed and a
// block layout (each task draws from a generator seeded by seed and its
// place in the stage).
func (d *Dataset) RandomSample(fraction float64, seed uint64) *Dataset {
	if !(fraction >= 0 && fraction <= 1) {
		return d.withErr(fmt.Errorf("%w: data: RandomSample(%v): a fraction from 0 to 1", atoll.ErrInvalidArgument, fraction))
	}
	return d.mapOp("sample", opSpec{Kind: "sample", Fraction: fraction, Seed: seed}, nil)
}

// Limit keeps the first n rows.
func (d *Dataset) Limit(n int64) *Dataset {
	if n < 0 {
		return d.withErr(fmt.Errorf("%w: data: Limit(%d)", atoll.ErrInvalidArgument, n))
	}
	return d.with(&logicalOp{name: "limit", kind: kindLimit, op: opSpec{Kind: "limit", Limit: n}})
}

// Repartition redistributes the rows into n parts of (nearly) equal row
// counts, each one block. Row order is not kept: part j holds the j-th
// n-th of every input block, in the input's order. A part larger than
// Config.TargetMaxBlockSize comes as several blocks, and one of more than
// half the run's memory budget is concatenated by several tasks, each
// taking the next of its pieces up to a quarter of the budget (Stats says
// so), rather than by one task whose input would not fit the store.
func (d *Dataset) Repartition(n int) *Dataset {
	if n <= 0 {
		return d.withErr(fmt.Errorf("%w: data: Repartition(%d)", atoll.ErrInvalidArgument, n))
	}
	return d.with(&logicalOp{name: "repartition", kind: kindAllToAll, parts: n})
}

// SortOption sets how Sort runs.
type SortOption func(*logicalOp)

// Descending sorts largest first.
func Descending() SortOption { return func(o *logicalOp) { o.descending = true } }

// Partitions sets the number of sorted output blocks (default: as many
// as the input has). A sort whose input is more than twice n times a
// quarter of the run's memory budget takes more, so that each range is
// sorted by a task that fits the store (Stats says so); the rows come
// in the same order either way. The input's size is known when it is
// stored blocks, or reads with no operation before the sort that may
// drop rows (a filter keeping a little of a large input would make many
// nearly empty ranges). Otherwise the ranges are as asked, and one that
// comes out of the split larger than a quarter of the store (and than
// half the budget) is cut again: a sample and a split of its own pieces.
func Partitions(n int) SortOption { return func(o *logicalOp) { o.parts = n } }

// Sort sorts the rows by column (nulls last) with a distributed sample
// sort: each input block is sampled, range bounds are chosen from the
// samples, each block is cut into the ranges (a task of P returns), and
// one task per range merges and sorts its pieces. The map outputs stay in
// the object store, which spills them when they do not fit. SortBy sorts
// by several columns.
func (d *Dataset) Sort(column string, opts ...SortOption) *Dataset {
	o := &logicalOp{}
	for _, f := range opts {
		f(o)
	}
	if column == "" {
		return d.withErr(fmt.Errorf("%w: data: Sort needs a column", atoll.ErrInvalidArgument))
	}
	return d.SortBy([]SortKey{{Column: column, Descending: o.descending}}, Partitions(o.parts))
}
