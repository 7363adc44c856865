// Package data is Ray Datasets' role on atoll: lazy datasets of
// Apache Arrow record batches held in the object store, transformed by
// tasks, with stage fusion, a memory budget and per-stage stats. It is a
// library on the public SDK, like package graph: it adds no actor to the
// node.
//
//	price := expr.Col("price").Mul(expr.Col("qty"))
//	ds := data.ReadParquet("in/").
//		Filter(price.Gt(100)).                          // an expression: Arrow kernels over whole batches
//		WithColumn("band", expr.When(price.Gt(1000)).Then("big").Otherwise("small")).
//		GroupBy("band").Aggregate(data.Count(), price.Sum().As("revenue"))
//	for rec, err := range ds.IterBatches(ctx, 0) { ... } // runs: read->filter->with_column->aggregate
//	fmt.Print(ds.Stats())                                // columns read, row groups skipped, per stage
//
// Expressions (package data/expr) say most of what a pipeline computes:
// they travel inside the plan with nothing registered, are checked
// against the schema before anything runs, and run on Arrow compute
// kernels over whole batches. For what they cannot say, functions of
// batches or rows are registered by name at package init, so the worker
// processes (your binary, re-executed) know them:
//
//	var double = data.RegisterBatchFunc("double", func(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) { ... })
//	ds := data.ReadParquet("in/").MapBatches(double, data.BatchSize(4096)).Sort("key")
//	err := ds.WriteParquet(ctx, "out/")   // runs: read->map_batches->sort, then write
//
// Each sort of function
// is a namespace of its own in the program's registry, next to atoll's
// remote functions: "data batch function" (RegisterBatchFunc), "data row
// function" (RegisterRowFunc), "data predicate", "data column function",
// "data flat-map function" and "data batch class". A name taken twice in
// one of them panics at init (atoll: data row function "double"
// registered twice); a name the process running an operation does not
// know is a NotRegisteredError whose Kind is the namespace's name.
//
// # Blocks
//
// A block is one record batch stored as one object: the bytes of an Arrow
// IPC stream (schema, one record batch, end marker). A task reads its
// input blocks in place: the column buffers are slices of the object
// store's shared memory, with no copy (arrow-go's own stream reader
// copies message bodies, so blocks are read through a message reader over
// the view); only the schema and each batch's small flatbuffer header are
// decoded. Writing a block copies the output once into the IPC stream.
// The driver keeps each block's rows, bytes and schema beside its ref.
// IterBatches yields views too, valid until the loop body returns;
// ToArrow copies.
//
// The columns a task reads from Parquet and computes with expressions and
// Arrow kernels come from a recycling allocator (Allocator): a buffer goes
// back to it when its array is released and is reused by the next batch,
// so a worker reading batch after batch reuses the same memory instead of
// leaving gigabytes to its collector. A registered function therefore
// keeps Arrow's rule that it must not use an array its caller released:
// it may return its argument as it is, or new arrays over its columns
// (which Retain them), but must not keep either after it returns.
//
// # Execution
//
// Operations build a logical plan and run nothing. Consuming a dataset
// (Count, Iter, IterBatches, Take, TakeAll, Show, Schema, ToArrow,
// WriteParquet, Materialize) first checks the plan against the source's
// schema, when the driver knows it (Range, stored blocks, the first
// Parquet file's footer): each operation's columns, expressions and
// aggregations, in order, with the schema each operation makes; an
// operation after a registered function (whose output only running
// tells) is checked in its tasks instead. The same walk gives a Parquet
// read its pushdown: the columns the plan uses (the others are not
// read) and the Filter conditions on the file's columns as read, with
// which the driver skips the row groups whose statistics rule them out
// (expr.MayMatch); Stats shows the columns read, the row groups read
// and skipped, and the bytes of column chunks against the files'.
// Then it plans its stages: a read and the
// map-like operations after it fuse into one task per block while they
// share compute strategy and resources; an all-to-all (Sort,
// Repartition, GroupBy-Aggregate, RandomShuffle) fuses with the maps
// before it, not after; a limit ends its stage; a Union or a Zip is the
// source of its stage (the maps after it fuse into its tasks). Each
// stage submits one task per input block (SPREAD; a read task is retried
// up to 3 times on a file error that may pass, ErrTransient, and its last
// error says which attempt it was; Stats count the retried tasks; its
// other errors are final at once),
// yields output blocks in order, and keeps the bytes
// in flight — inputs and expected outputs of running tasks, plus blocks
// produced and not yet consumed — under a memory budget (Config:
// MemoryBudget, or BudgetFraction of the store, default a quarter). A
// stream runs one task until it has seen how many bytes a task produces
// per byte expected. Outputs are split into blocks of at most
// Config.TargetMaxBlockSize (512 MiB by default, at most a quarter of the
// store). Sort is a sample sort:
// the fused maps and a sample of the key columns per block, bounds (rows
// of the keys) from the samples, a split task per block with one return
// per range, a merge task per range; its map outputs stay in the store,
// which spills them. A key value common enough to take several bounds
// (null included) has its rows dealt in turn to those bounds' ranges, so
// no merge task gets every row of one frequent key. When its input is a read that can run again (Parquet
// row groups or a Range, with only built-in operations before the sort),
// the sample pass reads only the columns the keys need (what the
// operations before the sort use to make them) and keeps nothing, and
// the split tasks read the input again; so only the split's pieces pass
// through the store. It does so when the sample reads fewer columns than
// the split, or the input is a Range with nothing before the sort, or the
// input is larger than the run's budget (kept, it would spill);
// otherwise the sample pass keeps its blocks for the split. GroupBy-Aggregate and RandomShuffle are hash
// all-to-alls: a map task per block (the fused maps, then a partial
// aggregate or a seeded permutation, cut into P parts: by a hash of the
// group key, or in equal ranges) and a reduce task per part (combining
// the partials: counts and sums add, Mean from count and sum, Std from
// count, mean and squared deviations combined pairwise; or permuting
// again). Their map outputs stay in the store too. P is the option given
// (NumPartitions, Partitions), else for GroupBy one part per CPU of the
// driver's node (at most the input blocks), else the number of input
// blocks when the stage's source has them (read tasks, stored blocks),
// else Config.Parallelism. When a GroupBy's map tasks read their input,
// the first runs alone, and if its output says a part would hold more
// than a reduce task should (its share of the budget), the parts become
// as many as needed and that task runs again with the others. Otherwise
// (stored blocks), a part that holds more than a reduce task should is
// combined and cut again by a second hash into sub-parts, each with a
// reduce task, as soon as it holds that much, while the maps still run;
// Stats shows the overlap (Config.NoOverlap: neither, the parts are cut
// after the last map). Whatever P was asked, no reduce task takes more
// than a quarter of the budget once a part passes half of it: a Sort
// takes more ranges (from the input's size, before the split; a range
// still larger than a quarter of the store after it is sampled and split
// again), a RandomShuffle's or a GroupBy's part is cut again after the
// map side,
// and a Repartition's part is concatenated, in order, by several tasks;
// Stats notes each. Zip runs both inputs to the end first (blocks in
// the store), then a task per left block takes the right rows lined up
// with it. Split runs the dataset (Materialize) and cuts only the blocks
// a boundary falls in.
//
// An operation with ActorPool(min, max) runs in an actor stage:
// the maps on pools of the same size fuse and run in long-lived atoll
// actors (atoll/data.pool) instead of tasks; a BatchClass's setup runs
// once per actor. min actors start with the stage, more while a block
// waits for an idle actor, up to max (past min only while the node keeps
// a CPU free, for actors that hold CPUs); each actor maps one block at a
// time under the same budget; a block whose actor died is sent to
// another (atoll restarts the actor, up to 3 times); the actors are
// killed when the stage ends, the consumer stops or the run fails or is
// cancelled.
//
// A run has a monitor goroutine while it goes: a stage
// whose tasks have waited Config.CPUWaitWarning (30 s) with no task
// finished while this node's CPUs were held by more than its own pending
// tasks is logged once (Config.Logger) and counted in Stats; and it
// draws a progress line per stage on Config.Progress (or on stderr when
// that is a terminal) at most every Config.ProgressInterval.
// Config.CPUShare caps the CPU a run's tasks and actors hold at once (a
// cap that leaves the rest of the node to other work, not a reservation:
// atoll's scheduler has none, so work submitted earlier can still hold
// every CPU).
//
// # Errors
//
// A dataset's operations are checked when it runs, before anything is
// submitted: a bad argument matches atoll.ErrInvalidArgument, and so do
// a column the schema lacks (a ColumnError) and an expression that does
// not fit it (an *expr.Error naming the expression, the column and the
// type). A task
// that fails returns an atoll.TaskError, and errors.As and errors.Is see
// through it, wherever the task ran, to what failed: a FunctionError when
// a registered function returned an error or panicked (naming the
// function and the operation; the function's own errors of types
// registered with atoll.RegisterError are found too), a ColumnError for a
// column the data lacks or whose type an operation does not handle, a
// SchemaError for blocks of different schemas, a FileError for a file
// that does not read or write (matching fs.ErrNotExist and
// fs.ErrPermission as its cause did), a NotRegisteredError when the
// worker's binary lacks a function, a MalformedError when a task's spec
// or a block does not decode.
//
// # Encodings
//
// Each kind of bytes has one encoding. What the driver tells a task (the
// read, the operations, how to shape the output) and what the task tells
// the driver back (the rows, bytes and schema of each block, its timing)
// are protobuf messages, atollpb.DataTask and atollpb.DataTaskMeta, like
// every message atoll sends between processes; each side checks what it
// receives before it uses it. Blocks, and the schemas, sort bounds and
// sort samples inside those messages, are Arrow IPC streams; the rows a
// program gives (FromItems, what a Map function returns) become columns
// of blocks.
//
// # Supported
//
//   - Sources: Range, FromItems (structs or maps), FromArrow, ReadParquet
//     (files or directories, a task per row group), ReadCSV (a task per
//     file; the columns' types inferred by the driver from the first MiB
//     of every file, one schema for the whole read), ReadJSON
//     (newline-delimited, a task per file, one schema inferred by the
//     driver from the first MiB of every file, decoded by arrow-go's JSON
//     reader). ReadCSVWith and ReadJSONWith take a CSV file's delimiter
//     and null values, and the types of the columns they name.
//   - Expressions (data/expr): Filter, WithColumn, SelectExprs and the
//     aggregations' inputs; columns, literals, arithmetic, comparisons,
//     three-valued logic, nulls, casts, string predicates, IsIn,
//     When/Then/Otherwise, numeric functions (Abs, Round, Floor, Ceil,
//     Sqrt, Log, Pow) and string ones (Lower, Upper, Trim, Replace,
//     Slice, Len, Concat); timestamps and dates compared with time.Time
//     values, cut by Truncate and read in parts by Part (year, month,
//     weekday...).
//   - Transforms: Map, FlatMap, MapBatches (BatchSize; a BatchFunc in
//     tasks, or a BatchFunc or stateful BatchClass on an ActorPool),
//     FilterFunc, AddColumn, Select, Drop, RenameColumns (old name to
//     new, no copy; a read still reads only what the plan uses, by the
//     file's names), RandomSample (each row kept with a probability,
//     seeded), Limit, Repartition, Sort (one
//     column) and SortBy (several: Key(col) or Key(col, Descending())
//     each; int64, int32, float64, float32, string, timestamp, date32,
//     date64, duration; nulls last in either direction), RandomShuffle
//     (seeded: the same order for a seed and a block layout).
//   - GroupBy(cols...).Aggregate(aggs...) on int64, int32, float64,
//     float32, string, timestamp, date or duration columns (nulls a group
//     of their own) with Count,
//     Sum, Mean, Min, Max, Std (sample, ddof 1) of a column or of any
//     expression (expr.Col("x").Mul(2).Sum()), columns named as Ray's
//     (count(), sum(x), ...) or by As, and functions of aggregations
//     (Add, Sub, Mul, Div, Round, Cast, FillNull, Then:
//     expr.Col("x").Sum().Div(expr.Count()).Round(2)), each aggregation
//     computed once; one row per group, each block sorted by the
//     group columns (not the whole output); GroupedData.Count, Sum...
//     shorthands. Dataset.Aggregate (or GroupBy with no column) folds
//     every row into one.
//   - Join (inner, left, right, full, semi, anti) on one or more keys
//     (RightOn for other names; Suffix for clashing names): broadcast
//     when the right side is estimated under Config.BroadcastThreshold
//     (64 MiB) or BroadcastBelow, fused with the left's maps, a worker
//     building the right's hash table once; otherwise shuffled, both
//     sides cut into JoinPartitions parts by a hash of the keys, the
//     left's pieces joined as they come in groups within the budget (a
//     part larger than the store streams through it); a part whose right
//     rows are more than half the budget (a key in most of them) is
//     joined in chunks of them, each group of left pieces once per chunk,
//     the left rows no chunk matched settled by one more task per group.
//     Null keys match nothing; keys of different types are a plan-time
//     ColumnError. Keys are integers, floats, strings, bools, timestamps
//     or dates.
//   - Combining: Union (inputs in order, one schema), Zip (row-aligned,
//     repeated names get _1; different row counts are an
//     ErrInvalidArgument), Split(ctx, n) (eager, like Ray's
//     split(n, equal=True): row counts within one of each other).
//   - Consumers: Count, Schema, Show (columns in the schema's order),
//     Unique (a column's distinct values), Take, TakeAll, Iter, IterBatches (Prefetch), ToArrow, WriteParquet,
//     WriteCSV, WriteJSON (newline-delimited, a row an object with its
//     columns in order, times as RFC 3339 text), Materialize; Stats. WriteParquet writes Snappy pages with
//     Snappy's standard encoder (ParquetWriterProperties: the package
//     registers arrow-go's Snappy codec again so that the level it asks
//     for, 1, takes that encoder; other levels are as arrow-go made them),
//     and without a dictionary for columns whose sampled values are nearly
//     all distinct.
//   - Typed rows: IterAs, TakeAs and TakeAllAs read rows as Go structs
//     (fields by their `arrow` tag or name, as FromItems writes them;
//     pointer fields for nulls), the field types checked against the
//     schema once, before the first row.
//   - Per-operation resources (WithResources) and actor pools
//     (ActorPool); execution settings (WithConfig), including a CPU
//     share, the report of a stage waiting for a CPU, and progress lines.
//
// # Not yet
//
// Custom aggregations, Quantile, Unique; Split with locality hints,
// streaming_split; backpressure between the stages of a run beyond the
// shared budget (each stage pulls from the one before it on demand);
// reserving CPUs for datasets in the scheduler (CPUShare is a cap the
// driver keeps); the CPU-wait report sees only the driver's node and
// cannot tell a stage's own long task from other work when the stage has
// one task pending, nor see a pool actor that cannot start; a
// BatchClass has no teardown; an actor that keeps dying fails the run
// after a block was sent 4 times. A CSV or JSON read reads each file
// whole in its task, and its given types cover only top-level columns of
// the types inference makes. A task returns at most max(8, 1 + 2 x expected
// bytes / target) blocks, fixed when it is submitted: a task whose output
// grows past that makes blocks larger than the target. Row functions see
// int64, int32, float64, float32, string, bool, time.Time (timestamps
// and dates), time.Duration (durations) and []any (lists) values; other
// Arrow types pass through MapBatches only.
package data
