package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// The generated table: a random int64 "id" (the sort key), a group "key"
// in [0, keys), an int64 "value" in [0, 1e6) and a random string
// "payload" of payloadLen letters (which makes the rows ~230 bytes, so
// the row-at-a-time Filter sees a realistic number of rows per byte).
const (
	keys       = 1000
	payloadLen = 200
	maxValue   = 1_000_000
)

var inputSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

// digest is an order-independent summary of a multiset of rows: any lost,
// duplicated or altered row changes it.
type digest struct {
	Rows     int64
	Checksum uint64
}

func (d *digest) add(o digest) { d.Rows += o.Rows; d.Checksum += o.Checksum }

// mix is a 64-bit finaliser (splitmix64).
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func rowHash(id, key, value int64, payload string) uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, payload)
	return mix(uint64(id) ^ mix(uint64(key)<<32^uint64(value)) ^ h.Sum64())
}

// column returns rec's column name as T, or an error.
func column[T arrow.Array](rec arrow.RecordBatch, name string) (T, error) {
	var zero T
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return zero, fmt.Errorf("no column %q in %s", name, rec.Schema())
	}
	c, ok := rec.Column(idx[0]).(T)
	if !ok {
		return zero, fmt.Errorf("column %q is %s", name, rec.Column(idx[0]).DataType())
	}
	return c, nil
}

// summarize digests rec's rows and checks that "id" ascends from prev
// (the last id seen before rec); it returns the last id.
func summarize(rec arrow.RecordBatch, prev int64, first bool) (digest, int64, bool, error) {
	var d digest
	ids, err := column[*array.Int64](rec, "id")
	if err != nil {
		return d, prev, false, err
	}
	ks, err := column[*array.Int64](rec, "key")
	if err != nil {
		return d, prev, false, err
	}
	vs, err := column[*array.Int64](rec, "value")
	if err != nil {
		return d, prev, false, err
	}
	ps, err := column[*array.String](rec, "payload")
	if err != nil {
		return d, prev, false, err
	}
	sorted := true
	for i := range ids.Len() {
		id := ids.Value(i)
		if !first && id < prev {
			sorted = false
		}
		prev, first = id, false
		d.Rows++
		d.Checksum += rowHash(id, ks.Value(i), vs.Value(i), ps.Value(i))
	}
	return d, prev, sorted, nil
}

// generate writes about size bytes of Parquet into dir as files
// part-NNNNN.parquet, rowsPerGroup rows per row group, from seed; files
// are written two at a time. It returns the bytes written and the digest
// of the rows.
func generate(dir string, size int64, files, rowsPerGroup int, seed uint64, progress *benchfmt.Progress) (int64, digest, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, digest{}, err
	}
	var (
		mu    sync.Mutex
		total int64
		all   digest
		first error
		done  int
	)
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for f := range files {
		target := size/int64(files) + boolInt64(int64(f) < size%int64(files))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, d, err := generateFile(filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", f)), target, rowsPerGroup, seed+uint64(f))
			mu.Lock()
			defer mu.Unlock()
			total += n
			all.add(d)
			if err != nil && first == nil {
				first = err
			}
			done++
			progress.Step(done, files)
		}()
	}
	wg.Wait()
	return total, all, first
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func generateFile(path string, target int64, rowsPerGroup int, seed uint64) (int64, digest, error) {
	var d digest
	f, err := os.Create(path)
	if err != nil {
		return 0, d, err
	}
	defer f.Close()
	cw := &countingWriter{w: f}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false),
		parquet.WithMaxRowGroupLength(int64(rowsPerGroup)))
	fw, err := pqarrow.NewFileWriter(inputSchema, cw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return 0, d, err
	}
	r := rand.New(rand.NewPCG(seed, 0xda7a))
	// Each row group is about the same size: stop when the next would
	// overshoot the target by more than half a group.
	perGroup := int64(0)
	for cw.n == 0 || cw.n+perGroup/2 < target {
		before := cw.n
		rec, rd := generateGroup(r, rowsPerGroup)
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			_ = fw.Close()
			return cw.n, d, err
		}
		d.add(rd)
		perGroup = cw.n - before
	}
	if err := fw.Close(); err != nil {
		return cw.n, d, err
	}
	// On the disk before any pipeline is timed: the kernel writing the
	// generated bytes back meanwhile slowed the first turns of each
	// contender (a second or more of write-back a GiB).
	return cw.n, d, f.Sync()
}

func generateGroup(r *rand.Rand, n int) (arrow.RecordBatch, digest) {
	var d digest
	mem := memory.DefaultAllocator
	ib, kb, vb, pb := array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewStringBuilder(mem)
	defer ib.Release()
	defer kb.Release()
	defer vb.Release()
	defer pb.Release()
	ib.Reserve(n)
	kb.Reserve(n)
	vb.Reserve(n)
	pb.Reserve(n)
	pb.ReserveData(n * payloadLen)
	buf := make([]byte, payloadLen)
	for range n {
		id, key, value := int64(r.Uint64()), int64(r.IntN(keys)), int64(r.IntN(maxValue))
		x := r.Uint64()
		for i := range buf {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			buf[i] = 'a' + byte(x%26)
		}
		p := string(buf)
		ib.UnsafeAppend(id)
		kb.UnsafeAppend(key)
		vb.UnsafeAppend(value)
		pb.Append(p)
		d.Rows++
		d.Checksum += rowHash(id, key, value, p)
	}
	cols := []arrow.Array{ib.NewArray(), kb.NewArray(), vb.NewArray(), pb.NewArray()}
	rec := array.NewRecordBatch(inputSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec, d
}

// parquetFiles lists dir's *.parquet files in name order.
func parquetFiles(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".parquet") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// eachRowGroup reads the files' row groups one at a time, in order, the
// columns named (nil: every one), and calls fn with each group's
// records (released after fn returns).
func eachRowGroup(ctx context.Context, files []string, columns []string, fn func(arrow.RecordBatch) error) error {
	for _, path := range files {
		if err := eachRowGroupOf(ctx, path, columns, fn); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

func eachRowGroupOf(ctx context.Context, path string, columns []string, fn func(arrow.RecordBatch) error) error {
	mem := compute.GetAllocator(ctx)
	pf, err := file.OpenParquetFile(path, false, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, mem)
	if err != nil {
		return err
	}
	var cols []int // leaf columns (the schema is flat: a leaf per field)
	for i := range pf.MetaData().Schema.NumColumns() {
		if columns == nil || slices.Contains(columns, pf.MetaData().Schema.Column(i).Name()) {
			cols = append(cols, i)
		}
	}
	for rg := range pf.NumRowGroups() {
		tbl, err := fr.ReadRowGroups(ctx, cols, []int{rg})
		if err != nil {
			return err
		}
		tr := array.NewTableReader(tbl, 1<<62)
		for tr.Next() {
			if err := fn(tr.RecordBatch()); err != nil {
				tr.Release()
				tbl.Release()
				return err
			}
		}
		err = tr.Err()
		tr.Release()
		tbl.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func boolInt64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
