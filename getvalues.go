package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// GetValues gets refs of any types, in order, as GetAll does for refs of
// one type: the i-th value is the T of refs[i] (an ObjectRef[T]), boxed
// in an any; assert it back (v.(int)). It fails with the first error.
// Like Get, slices are copies.
func GetValues(ctx context.Context, refs []Ref) ([]any, error) {
	rt, err := running()
	if err != nil {
		return nil, err
	}
	out := make([]any, len(refs))
	hs := make([]*refHandle, len(refs))
	ds := make([]anyDecoder, len(refs))
	for i, r := range refs {
		h, err := handleOf(rt, r, "GetValues", i)
		if err != nil {
			return nil, err
		}
		d, ok := r.(anyDecoder)
		if !ok {
			return nil, errs.Invalidf("GetValues: refs[%d] is a %T, not an ObjectRef", i, r)
		}
		hs[i], ds[i] = h, d
	}
	err = getMany(ctx, "GetValues", hs, func(i int, v *atollpb.Value) (err error) {
		out[i], err = ds[i].decodeAny(ctx, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// anyDecoder is an ObjectRef[T] seen without its T.
type anyDecoder interface {
	// decodeAny decodes value as a T (nil value: Get it, rebuilding a
	// lost object).
	decodeAny(ctx context.Context, value *atollpb.Value) (any, error)
}

func (r ObjectRef[T]) decodeAny(ctx context.Context, value *atollpb.Value) (any, error) {
	if value == nil {
		return Get(ctx, r)
	}
	return decodeValue[T](ctx, r.h.rt, r.h, value)
}
