package data

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
)

// Snappy pages at WriteParquet's level are Snappy's standard encoding;
// at any other level they are what arrow-go's codec made before; both
// decode back through the codec.
func TestFastSnappy(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Snappy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(fastSnappy); !ok {
		t.Fatalf("the Snappy codec is a %T", c)
	}
	src := bytes.Repeat([]byte("atoll writes parquet, atoll reads it back; "), 500)
	for _, level := range []int{snappyBestSpeed, compress.DefaultCompressionLevel} {
		enc := c.EncodeLevel(nil, src, level)
		want := snappy.Encode(nil, src)
		if level == snappyBestSpeed {
			want = s2.EncodeSnappy(nil, src)
		}
		if !bytes.Equal(enc, want) {
			t.Errorf("level %d: %d bytes, not the encoder's %d", level, len(enc), len(want))
		}
		dec, err := c.(compress.ErrorCodec).DecodeWithError(nil, enc)
		if err != nil || !bytes.Equal(dec, src) {
			t.Errorf("level %d: decoded %d bytes, %v", level, len(dec), err)
		}
	}
	if _, err := c.(compress.ErrorCodec).DecodeWithError(nil, []byte{0xff, 0xff, 0xff}); err == nil {
		t.Error("garbage decoded without an error")
	}
}

// Columns of nearly distinct values are written without a dictionary;
// columns of few values, short records and other types keep it.
func TestDictionaryOff(t *testing.T) {
	const n = 3 * dictionarySample
	ids, keys := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	names, kinds := array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator)
	flags := array.NewBooleanBuilder(memory.DefaultAllocator)
	for i := range n {
		ids.Append(int64(i) * 7919)
		keys.Append(int64(i % 10))
		names.Append(fmt.Sprintf("name-%d", i))
		kinds.Append([]string{"a", "b", "c"}[i%3])
		flags.Append(i%2 == 0)
	}
	var cols []arrow.Array
	var fields []arrow.Field
	for _, c := range []struct {
		name string
		b    array.Builder
	}{{"id", ids}, {"key", keys}, {"name", names}, {"kind", kinds}, {"flag", flags}} {
		a := c.b.NewArray()
		c.b.Release()
		defer a.Release()
		cols = append(cols, a)
		fields = append(fields, arrow.Field{Name: c.name, Type: a.DataType()})
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	defer rec.Release()
	props := ParquetWriterProperties(dictionaryOff(rec)...)
	for col, want := range map[string]bool{"id": false, "key": true, "name": false, "kind": true, "flag": true} {
		if got := props.DictionaryEnabledFor(col); got != want {
			t.Errorf("column %s: dictionary %v, want %v", col, got, want)
		}
	}
	if off := dictionaryOff(rec.NewSlice(0, dictionarySample-1)); len(off) != 0 {
		t.Errorf("a record of %d rows: %d columns without a dictionary", dictionarySample-1, len(off))
	}
}
