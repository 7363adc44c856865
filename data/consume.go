package data

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
)

// execute runs d, calling each for every output block in order; each
// block is released after each returns, unless keep.
func (d *Dataset) execute(ctx context.Context, each func(block) (bool, error), keep bool, extra ...*logicalOp) error {
	s, r, err := d.start(ctx, extra...)
	if err != nil {
		return err
	}
	defer func() {
		s.close()
		r.stopMonitor()
		d.last.mu.Lock()
		stages := r.stageList()
		r.mu.Lock()
		peak := r.peak
		r.mu.Unlock()
		d.last.stages, d.last.peak = stages, peak
		d.last.mu.Unlock()
	}()
	for {
		b, ok, err := s.next(ctx)
		if err != nil || !ok {
			return err
		}
		more, err := each(b)
		if !keep {
			b.release()
		}
		if err != nil || !more {
			return err
		}
	}
}

// Stats describes the last run of this dataset, a (fused) stage after
// another: the tasks executed, their wall and CPU time, the rows they
// produced. A run of Show, Take or TakeAs counts as the dataset's (its
// last stage is the limit).
func (d *Dataset) Stats() string {
	d.last.mu.Lock()
	defer d.last.mu.Unlock()
	return formatStats(d.last.stages)
}

// BytesRead is the bytes of files the last run's read tasks read
// (Parquet: the column chunks they read; CSV and JSON: whole files).
func (d *Dataset) BytesRead() int64 {
	d.last.mu.Lock()
	defer d.last.mu.Unlock()
	var n int64
	for _, st := range d.last.stages {
		st.mu.Lock()
		for _, sub := range st.subs {
			sub.mu.Lock()
			n += sub.readBytes
			sub.mu.Unlock()
		}
		st.mu.Unlock()
	}
	return n
}

// Count returns the number of rows (from the blocks' metadata: the
// driver reads no block).
func (d *Dataset) Count(ctx context.Context) (int64, error) {
	var n int64
	err := d.execute(ctx, func(b block) (bool, error) { n += b.rows; return true, nil }, false)
	return n, err
}

// Materialize runs d and returns a dataset of its blocks, kept in the
// object store (spilled if they do not fit) while the returned dataset
// is reachable. Its Stats are the run's.
func (d *Dataset) Materialize(ctx context.Context) (*Dataset, error) {
	var bs []block
	err := d.execute(ctx, func(b block) (bool, error) {
		b.borrowed = true
		bs = append(bs, b)
		return true, nil
	}, true)
	if err != nil {
		for _, b := range bs {
			b.ref.Release()
		}
		return nil, err
	}
	nd := newDataset(&source{blocks: bs}, "materialized", nil)
	nd.cfg = d.cfg
	nd.last = d.last
	return nd, nil
}

// NumBlocks is the number of blocks of a materialized dataset, -1 for a
// lazy one.
func (d *Dataset) NumBlocks() int {
	if d.source.open != nil || len(d.ops) > 1 {
		return -1
	}
	return len(d.source.blocks)
}

// IterBatches yields the rows in batches of batchSize rows (the last may
// be smaller; batchSize <= 0 yields each block as it is). A batch's
// buffers are views of the object store (no copy) when it lies within
// one block: it is valid until the loop body returns, and must be
// retained and copied to be kept. Stopping the loop early stops the run.
// Options: Prefetch.
func (d *Dataset) IterBatches(ctx context.Context, batchSize int, opts ...IterOption) iter.Seq2[arrow.RecordBatch, error] {
	ic := iterOptions(opts)
	return func(yield func(arrow.RecordBatch, error) bool) {
		if ic.err != nil {
			yield(nil, ic.err)
			return
		}
		var carry arrow.RecordBatch
		defer func() {
			if carry != nil {
				carry.Release()
			}
		}()
		stopped := false
		err := d.eachFetched(ctx, ic.prefetch, func(b block, raw atoll.Raw) (bool, error) {
			rec, err := decodeBlock(raw.Data)
			if err != nil {
				return false, err
			}
			recs := []arrow.RecordBatch{rec}
			if carry != nil {
				recs = []arrow.RecordBatch{carry, rec}
				carry = nil
			}
			batches := rebatch(recs, batchSize)
			releaseAll(recs)
			for i, bt := range batches {
				if batchSize > 0 && i == len(batches)-1 && bt.NumRows() < int64(batchSize) {
					// the rest of this block waits for the next one: copy it
					// out of the block, whose ref goes now
					c, err := copyRecord(bt)
					releaseAll(batches[i:])
					if err != nil {
						return false, err
					}
					carry = c
					break
				}
				ok := yield(bt, nil)
				bt.Release()
				if !ok {
					releaseAll(batches[i+1:])
					stopped = true
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			yield(nil, err)
			return
		}
		if carry != nil && !stopped {
			yield(carry, nil)
		}
	}
}

// copyRecord copies rec's buffers into Go memory.
func copyRecord(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for j := range cols {
		c, err := array.Concatenate([]arrow.Array{rec.Column(j)}, memory.DefaultAllocator)
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
		cols[j] = c
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	releaseArrays(cols)
	return out, nil
}

// Iter yields the rows one at a time. Options: Prefetch.
func (d *Dataset) Iter(ctx context.Context, opts ...IterOption) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for rec, err := range d.IterBatches(ctx, 0, opts...) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range recordRows(rec) {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

// TakeAll returns every row.
func (d *Dataset) TakeAll(ctx context.Context) ([]Row, error) {
	var rows []Row
	for r, err := range d.Iter(ctx) {
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Unique returns the distinct values of column in ascending order (a
// null, as nil, last), as Ray Data's unique does: the column grouped
// through the shuffle (GroupBy's key types), so the values need only
// fit in the driver's memory.
func (d *Dataset) Unique(ctx context.Context, column string) ([]any, error) {
	rows, err := d.GroupBy(column).Count().Sort(column).Select(column).TakeAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r[column]
	}
	return out, nil
}

// Take returns the first n rows.
func (d *Dataset) Take(ctx context.Context, n int64) ([]Row, error) {
	return d.head(n).TakeAll(ctx)
}

// ToArrow returns the dataset's blocks as records in Go memory (copied
// out of the store); the caller releases them.
func (d *Dataset) ToArrow(ctx context.Context) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for rec, err := range d.IterBatches(ctx, 0) {
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		c, err := copyRecord(rec)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Schema returns the dataset's schema: the plan's, when the driver can
// derive it from the source's (no task runs), else, after a registered
// function whose output is unknown until it runs, its first block's
// (running the dataset up to its first block).
func (d *Dataset) Schema(ctx context.Context) (*arrow.Schema, error) {
	if err := d.cfg.validate(); err != nil {
		return nil, err
	}
	if s, _, err := d.planEstimate(); err != nil || s != nil {
		return s, err
	}
	var s *arrow.Schema
	err := d.execute(ctx, func(b block) (bool, error) { s = b.schema; return false, nil }, false)
	if err == nil && s == nil {
		s = arrow.NewSchema(nil, nil)
	}
	return s, err
}

// head is d.Limit(n) whose runs d.Stats describes: Show, Take and TakeAs
// run it.
func (d *Dataset) head(n int64) *Dataset {
	h := d.Limit(n)
	h.last = d.last
	return h
}

// Show writes the first n rows to w, one a line, columns in the
// schema's order.
func (d *Dataset) Show(ctx context.Context, w io.Writer, n int64) error {
	for rec, err := range d.head(n).IterBatches(ctx, 0) {
		if err != nil {
			return err
		}
		for i := range int(rec.NumRows()) {
			parts := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				v := cell(col, i)
				switch v.(type) {
				case time.Time, []any:
					// a date without its midnight, a time without "+0000
					// UTC", a list as JSON (["a b", "c"], not [a b c])
					v = col.GetOneForMarshal(i)
					if raw, ok := v.(json.RawMessage); ok {
						v = string(raw) // printed as text, not as bytes
					}
				}
				parts[j] = fmt.Sprintf("%s: %v", rec.ColumnName(j), v)
			}
			if _, err := fmt.Fprintf(w, "{%s}\n", strings.Join(parts, ", ")); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteParquet writes the dataset to dir as files part-NNNNN.parquet, one
// per task of the last stage, written by the tasks themselves (the write
// fuses with the maps before it).
func (d *Dataset) WriteParquet(ctx context.Context, dir string) error {
	return d.writeFiles(ctx, "WriteParquet", "write_parquet", dir)
}
