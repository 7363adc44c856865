package runtime

import (
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TestDecodeInScansOnlyValuesThatMayHoldRefs: with several runtimes in
// the process (in-process workers), a gob value whose bytes hold a ref's
// marker is decoded under its runtime's scope; a raw byte or numeric
// slice is decoded without one, even if its bytes happen to hold the
// marker: it cannot hold a ref, and scanning it cost a pass over every
// large array argument (a 1 GiB broadcast ran 15x slower in-process).
func TestDecodeInScansOnlyValuesThatMayHoldRefs(t *testing.T) {
	scope.shared.Add(1)
	defer scope.shared.Add(-1)
	rt := &Runtime{}
	data := append(append([]byte("xx"), refMarker...), "yy"...)
	for _, c := range []struct {
		codec atollpb.Codec
		want  *Runtime
	}{
		{atollpb.Codec_CODEC_GOB, rt},
		{atollpb.Codec_CODEC_BYTES, nil},
		{atollpb.Codec_CODEC_FLOAT64, nil},
		{atollpb.Codec_CODEC_INT32, nil},
	} {
		var got *Runtime
		if err := DecodeIn(rt, c.codec, data, func() error { got = scope.rt.Load(); return nil }); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: decoded under scope %p, want %p", c.codec, got, c.want)
		}
	}
}
