package data

import (
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

// snappyBestSpeed is the compression level WriteParquet asks of Snappy
// (flate's BestSpeed): the codec registered below encodes it with
// Snappy's standard encoder and every other level as before.
const snappyBestSpeed = 1

// ParquetWriterProperties returns the properties WriteParquet writes
// with (Snappy compression, at its fastest encoder), then opts: for a
// program that writes Parquet beside a dataset and wants the same files.
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
