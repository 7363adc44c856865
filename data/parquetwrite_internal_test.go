package data

import (
	"bytes"
	"testing"

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
