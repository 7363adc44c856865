package atoll_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
)

var (
	sumN = atoll.NewFuncN("test.sumN", func(_ context.Context, xs [][]float64) (float64, error) {
		var s float64
		for _, x := range xs {
			for _, v := range x {
				s += v
			}
		}
		return s, nil
	})
	// rawIdentity returns its only argument as it is stored.
	rawIdentity = atoll.NewFuncN("test.rawIdentity", func(_ context.Context, xs []atoll.Raw) (atoll.Raw, error) {
		if len(xs) != 1 {
			return atoll.Raw{}, errors.New("want one argument")
		}
		return atoll.Raw{Codec: xs[0].Codec, Data: append([]byte(nil), xs[0].Data...)}, nil
	})
	// rawRefsSum decodes its Raw argument as refs (DecodeRaw) and sums
	// what they hold.
	rawRefsSum = atoll.NewFuncN("test.rawRefsSum", func(ctx context.Context, xs []atoll.Raw) (int, error) {
		if len(xs) != 1 {
			return 0, errors.New("want one argument")
		}
		rs, err := atoll.DecodeRaw[rawRefs](ctx, xs[0])
		if err != nil {
			return 0, err
		}
		parts, err := atoll.GetAll(ctx, rs.Parts)
		total := 0
		for i, p := range parts {
			rs.Parts[i].Release()
			for _, x := range p {
				total += x
			}
		}
		return total, err
	})
	splitN = atoll.NewMultiFuncN("test.splitN", func(_ context.Context, xs []int) ([]int, error) {
		return xs, nil
	})
)

func TestFuncN(t *testing.T) {
	ctx := start(t, atoll.WithWorkerMode(atoll.ProcessWorkers))
	big := make([]float64, 64<<10) // stored, not inline
	for i := range big {
		big[i] = 1
	}
	ref, err := atoll.Put(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	got, err := atoll.Get(ctx, sumN.Remote(ctx, []atoll.Arg[[]float64]{atoll.Value([]float64{1, 2}), ref, atoll.Value([]float64{})}))
	if err != nil || got != float64(len(big)+3) {
		t.Fatalf("sumN = %v, %v; want %d", got, err, len(big)+3)
	}
	// No arguments at all is a call too.
	if got, err := atoll.Get(ctx, sumN.Remote(ctx, nil)); err != nil || got != 0 {
		t.Fatalf("sumN() = %v, %v", got, err)
	}
	// A nil argument is refused before anything is submitted.
	_, err = atoll.Get(ctx, sumN.Remote(ctx, []atoll.Arg[[]float64]{nil}))
	if !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("nil argument: %v, want ErrInvalid", err)
	}
	refs := splitN.Remote(ctx, 3, []atoll.Arg[int]{atoll.Value(7), atoll.Value(8), atoll.Value(9)})
	vals, err := atoll.GetAll(ctx, refs)
	if err != nil || len(vals) != 3 || vals[0] != 7 || vals[2] != 9 {
		t.Fatalf("splitN = %v, %v", vals, err)
	}
}

var splitAdd = atoll.NewMultiMethodN(counterType, "SplitAdd", func(c *counter, _ context.Context, xs []int) ([]int, error) {
	out := make([]int, len(xs))
	for i, x := range xs {
		c.n += x
		out[i] = c.n
	}
	return out, nil
})

func TestMultiMethodN(t *testing.T) {
	ctx := start(t, atoll.WithWorkerMode(atoll.ProcessWorkers))
	c, err := counterType.New(ctx, atoll.Value(10))
	if err != nil {
		t.Fatal(err)
	}
	two, err := atoll.Put(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := atoll.GetAll(ctx, splitAdd.Remote(ctx, c, 3, []atoll.Arg[int]{atoll.Value(1), two, atoll.Value(3)}))
	if err != nil || len(vals) != 3 || vals[0] != 11 || vals[1] != 13 || vals[2] != 16 {
		t.Fatalf("SplitAdd = %v, %v; want [11 13 16]", vals, err)
	}
	// the state stays with the actor
	if v, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(4))); err != nil || v != 20 {
		t.Fatalf("Incr after SplitAdd = %v, %v", v, err)
	}
	// a count that does not match what the method returns fails the call
	if _, err := atoll.GetAll(ctx, splitAdd.Remote(ctx, c, 2, []atoll.Arg[int]{atoll.Value(1)})); !errors.Is(err, atoll.ErrTask) || !strings.Contains(err.Error(), "returned 1 values, want 2") {
		t.Fatalf("wrong return count: %v", err)
	}
	if _, err := atoll.GetAll(ctx, splitAdd.Remote(ctx, c, 1, []atoll.Arg[int]{nil})); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("nil argument: %v", err)
	}
}

func TestRawPassesValuesThrough(t *testing.T) {
	ctx := start(t, atoll.WithWorkerMode(atoll.ProcessWorkers))
	type point struct{ X, Y int }
	pref, err := atoll.Put(ctx, point{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	// A gob value and a raw slice go through a Raw function unchanged and
	// decode as their own types.
	back, err := atoll.Get(ctx, atoll.Retype[atoll.Raw](rawIdentity.Remote(ctx, []atoll.Arg[atoll.Raw]{atoll.Retype[atoll.Raw](pref)})))
	if err != nil || back.Codec != atollpb.Codec_CODEC_GOB {
		t.Fatalf("raw of a point: %+v, %v", back, err)
	}
	p, err := atoll.Get(ctx, asRef[point](rawIdentity.Remote(ctx, []atoll.Arg[atoll.Raw]{atoll.Retype[atoll.Raw](pref)})))
	if err != nil || p != (point{3, 4}) {
		t.Fatalf("point through raw = %+v, %v", p, err)
	}
	xs := []float64{1.5, 2.5}
	v, err := atoll.Get(ctx, asRef[[]float64](rawIdentity.Remote(ctx, []atoll.Arg[atoll.Raw]{
		atoll.Value(atoll.Raw{Codec: atollpb.Codec_CODEC_FLOAT64, Data: []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0x04, 0x40}}),
	})))
	if err != nil || len(v) != 2 || v[0] != xs[0] || v[1] != xs[1] {
		t.Fatalf("float64s through raw = %v, %v", v, err)
	}
	// A Raw without a codec cannot be stored.
	_, err = atoll.Get(ctx, rawIdentity.Remote(ctx, []atoll.Arg[atoll.Raw]{atoll.Value(atoll.Raw{Data: []byte{1}})}))
	if !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Raw without codec: %v, want ErrInvalid", err)
	}
}

// rawRefs is refs inside a value, passed through a Raw argument.
type rawRefs struct{ Parts []atoll.ObjectRef[[]int] }

// A gob value holding refs, passed as a Raw argument, lends them to the
// task as a typed argument would: DecodeRaw makes refs the task reads, in
// worker processes and in-process workers alike.
func TestDecodeRawLendsRefs(t *testing.T) {
	for _, mode := range []atoll.WorkerMode{atoll.ProcessWorkers, atoll.InProcessWorkers} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) { decodeRawLendsRefs(t, mode) })
	}
}

func decodeRawLendsRefs(t *testing.T, mode atoll.WorkerMode) {
	ctx := start(t, atoll.WithWorkerMode(mode))
	var rs rawRefs
	for i := range 3 {
		ref, err := atoll.Put(ctx, []int{i, 10 * i})
		if err != nil {
			t.Fatal(err)
		}
		rs.Parts = append(rs.Parts, ref)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(rs); err != nil {
		t.Fatal(err)
	}
	arg := atoll.Value(atoll.Raw{Codec: atollpb.Codec_CODEC_GOB, Data: buf.Bytes()})
	for _, r := range rs.Parts {
		r.Release() // the task's argument holds them now
	}
	got, err := atoll.Get(ctx, rawRefsSum.Remote(ctx, []atoll.Arg[atoll.Raw]{arg}))
	if err != nil || got != 33 {
		t.Fatalf("sum %d, %v; want 33", got, err)
	}
}

// asRef retypes a Raw result to the type it holds.
func asRef[T any](r atoll.ObjectRef[atoll.Raw]) atoll.ObjectRef[T] { return atoll.Retype[T](r) }
