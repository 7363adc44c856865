package data

import (
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/s2"
)

// Writing Parquet: the writer's properties, and Snappy at its fastest.
//
// arrow-go compresses Snappy pages with klauspost's "better" encoder,
// which searches hard for matches: on data with few (random ids, short
// random strings) it ran at about 200 MB/s here and compressed nothing,
// where Snappy's standard encoder runs at 5 GB/s for the same output
// size, and it was a third of a sort pipeline's worker CPU. The same
// format either way: any Snappy reader reads both.

// dictionarySample is the rows a column's values are sampled at to
// choose its encoding (dictionaryOff).
const dictionarySample = 4096

// dictionaryOff turns dictionary encoding off for rec's columns whose
// sampled values are nearly all distinct (ids, measurements): arrow-go
// hashes a column's values into a dictionary until it passes its page
// size limit (1 MiB) and then writes them plain anyway, so for such a
// column the dictionary is work thrown away. A column of few distinct
// values (categories, codes) keeps its dictionary.
func dictionaryOff(rec arrow.RecordBatch) []parquet.WriterProperty {
	n := int(rec.NumRows())
	if n < dictionarySample {
		return nil
	}
	var out []parquet.WriterProperty
	seed := maphash.MakeSeed()
	seen := make(map[uint64]struct{}, dictionarySample)
	for j, col := range rec.Columns() {
		var key func(i int) uint64
		switch c := col.(type) {
		case *array.Int64:
			key = func(i int) uint64 { return uint64(c.Value(i)) }
		case *array.Int32:
			key = func(i int) uint64 { return uint64(c.Value(i)) }
		case *array.Float64:
			key = func(i int) uint64 { return math.Float64bits(c.Value(i)) }
		case *array.String:
			key = func(i int) uint64 { return maphash.String(seed, c.Value(i)) }
		case *array.Binary:
			key = func(i int) uint64 { return maphash.Bytes(seed, c.Value(i)) }
		default:
			continue
		}
		clear(seen)
		for k := range dictionarySample {
			if i := k * (n / dictionarySample); col.IsValid(i) {
				seen[key(i)] = struct{}{}
			}
		}
		if len(seen) > dictionarySample*9/10 {
			out = append(out, parquet.WithDictionaryFor(rec.Schema().Field(j).Name, false))
		}
	}
	return out
}

// snappyBestSpeed is the compression level WriteParquet asks of Snappy
// (flate's BestSpeed): the codec registered below encodes it with
// Snappy's standard encoder and every other level as before.
const snappyBestSpeed = 1

// ParquetWriterProperties returns the compression WriteParquet writes
// with (Snappy, at its fastest encoder), then opts: for a program that
// writes Parquet beside a dataset. (WriteParquet also turns a column's
// dictionary off when a sample of its first record is nearly all
// distinct.)
func ParquetWriterProperties(opts ...parquet.WriterProperty) *parquet.WriterProperties {
	return parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithCompressionLevel(snappyBestSpeed)}, opts...)...)
}

// fastSnappy is arrow-go's Snappy codec but for EncodeLevel at
// snappyBestSpeed.
type fastSnappy struct{ snappyCodec }

// snappyCodec is what arrow-go's Snappy codec implements.
type snappyCodec interface {
	compress.ErrorCodec
	compress.StreamingCodec
}

func (c fastSnappy) EncodeLevel(dst, src []byte, level int) []byte {
	if level == snappyBestSpeed {
		return s2.EncodeSnappy(dst, src)
	}
	return c.snappyCodec.EncodeLevel(dst, src, level)
}

// The codec is registered at init, as arrow-go's codecs are (its
// registry takes no lock); a writer that does not ask for the level sees
// no change.
func init() {
	c, err := compress.GetCodec(compress.Codecs.Snappy)
	if sc, ok := c.(snappyCodec); err == nil && ok {
		compress.RegisterCodec(compress.Codecs.Snappy, fastSnappy{sc})
	}
}
