package graph

import (
	"context"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/codec"
)

// The two atoll functions every graph task runs as. The first argument is
// the task spec (wire.go), the rest are the task's dependencies, resolved
// by atoll before the task runs: views of the object store, decoded here
// by reflect type (a []float64 parameter gets a zero-copy view).
var (
	execOne = atoll.NewFuncN("atoll/graph.exec", func(ctx context.Context, args []atoll.Raw) (atoll.Raw, error) {
		outs, err := run(ctx, args, false)
		if err != nil {
			return atoll.Raw{}, err
		}
		return outs[0], nil
	})
	execMulti = atoll.NewMultiFuncN("atoll/graph.execN", func(ctx context.Context, args []atoll.Raw) ([]atoll.Raw, error) {
		return run(ctx, args, true)
	})
)

// run executes one graph task in the worker: decode the spec, run the
// pre-task callbacks, evaluate the expression, run the post-task
// callbacks, encode the result (each element, for a MultiReturn task).
func run(ctx context.Context, args []atoll.Raw, multi bool) ([]atoll.Raw, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("graph: exec without a task spec")
	}
	wt, err := decodeWireTask(args[0].Data)
	if err != nil {
		return nil, err
	}
	if len(args)-1 != len(wt.deps) {
		return nil, fmt.Errorf("graph key %q: %d dependencies, the spec names %d", wt.key, len(args)-1, len(wt.deps))
	}
	cbs := make([]TaskCallback, len(wt.cbs))
	states := make([]any, len(wt.cbs))
	info := make([]TaskInfo, len(wt.cbs))
	for i, c := range wt.cbs {
		if cbs[i] = lookupTaskCallback(c.name); cbs[i] == nil {
			return nil, fmt.Errorf("graph key %q: task callback %q is not registered in this binary", wt.key, c.name)
		}
		info[i] = TaskInfo{Key: wt.key, Hash: wt.hash, Param: c.param}
	}
	for i, cb := range cbs {
		states[i] = cb.PreTask(ctx, info[i])
	}
	ev := evaluator{ctx: ctx, deps: args[1:], types: wt.deps}
	v, err := ev.eval(&wt.expr, nil)
	if err != nil {
		return nil, fmt.Errorf("graph key %q: %w", wt.key, err)
	}
	result := v.Interface()
	for i, cb := range cbs {
		cb.PostTask(ctx, info[i], result, states[i])
	}
	if !multi {
		out, err := encodeResult(result, args)
		if err != nil {
			return nil, fmt.Errorf("graph key %q: %w", wt.key, err)
		}
		return []atoll.Raw{out}, nil
	}
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array || v.Len() != wt.nret {
		return nil, fmt.Errorf("graph key %q: a MultiReturn task of %d outputs returned %v", wt.key, wt.nret, describe(v))
	}
	outs := make([]atoll.Raw, wt.nret)
	for i := range outs {
		if outs[i], err = encodeResult(v.Index(i).Interface(), args); err != nil {
			return nil, fmt.Errorf("graph key %q: output %d: %w", wt.key, i, err)
		}
	}
	return outs, nil
}

func describe(v reflect.Value) string {
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
		return fmt.Sprintf("%d elements", v.Len())
	}
	return v.Type().String()
}

// encodeResult encodes a task's result. A raw slice that aliases an
// argument (a function that returns its input, or a part of it) is
// copied: argument views are released before atoll stores the result.
func encodeResult(v any, args []atoll.Raw) (atoll.Raw, error) {
	enc, err := codec.Encode(v)
	if err != nil {
		return atoll.Raw{}, err
	}
	for _, a := range args {
		if overlaps(enc.Data, a.Data) {
			enc.Data = append([]byte(nil), enc.Data...)
			break
		}
	}
	return atoll.Raw(enc), nil
}

func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

type evaluator struct {
	ctx   context.Context
	deps  []atoll.Raw
	types []wireDep
}

// eval evaluates e. target is the type the value goes to (a parameter's
// type, a list's element type), or nil where e has a type of its own (a
// task's result, a dependency computed by a task).
func (ev *evaluator) eval(e *wexpr, target reflect.Type) (reflect.Value, error) {
	switch e.kind {
	case wTask:
		v, err := ev.call(e)
		if err != nil {
			return reflect.Value{}, err
		}
		return convert(v, target)
	case wDep:
		if e.index >= len(ev.deps) {
			return reflect.Value{}, fmt.Errorf("dependency %d of %d", e.index, len(ev.deps))
		}
		t, err := ev.types[e.index].naturalType()
		if err != nil {
			return reflect.Value{}, err
		}
		if t == nil {
			t = target
		}
		if t == nil {
			return reflect.Value{}, fmt.Errorf("dependency %d has no type to decode it as", e.index)
		}
		d := ev.deps[e.index]
		v, err := codec.DecodeType(d.Codec, d.Data, t)
		if err != nil {
			return reflect.Value{}, err
		}
		return convert(v, target)
	case wLit:
		if target == nil {
			return reflect.Value{}, fmt.Errorf("a literal has no type to decode it as")
		}
		return codec.DecodeType(e.lit.Codec, e.lit.Data, target)
	case wList:
		if target == nil || target.Kind() != reflect.Slice {
			return reflect.Value{}, fmt.Errorf("a list passed as %v, not a slice", typeName(target))
		}
		s := reflect.MakeSlice(target, len(e.args), len(e.args))
		for i := range e.args {
			v, err := ev.eval(&e.args[i], target.Elem())
			if err != nil {
				return reflect.Value{}, err
			}
			s.Index(i).Set(v)
		}
		return s, nil
	case wItem:
		base, err := ev.eval(&e.args[0], nil)
		if err != nil {
			return reflect.Value{}, err
		}
		if base.Kind() != reflect.Slice && base.Kind() != reflect.Array {
			return reflect.Value{}, fmt.Errorf("Item of a %v", base.Type())
		}
		if e.index >= base.Len() {
			return reflect.Value{}, fmt.Errorf("Item %d of a %v of %d elements", e.index, base.Type(), base.Len())
		}
		return convert(base.Index(e.index), target)
	}
	return reflect.Value{}, fmt.Errorf("unknown expression kind %d", e.kind)
}

func (ev *evaluator) call(e *wexpr) (reflect.Value, error) {
	f := lookupFunc(e.fn)
	if f == nil {
		return reflect.Value{}, fmt.Errorf("function %q is not registered in this binary", e.fn)
	}
	in := make([]reflect.Value, 1+len(e.args))
	in[0] = reflect.ValueOf(ev.ctx)
	last := len(f.params) - 1
	for i := range e.args {
		pt := f.params[min(i, last)]
		if f.variadic && i >= last && !e.spread {
			pt = pt.Elem()
		}
		v, err := ev.eval(&e.args[i], pt)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("%s argument %d: %w", e.fn, i, err)
		}
		in[1+i] = v
	}
	var out []reflect.Value
	if e.spread {
		out = f.fn.CallSlice(in)
	} else {
		out = f.fn.Call(in)
	}
	if err, _ := out[1].Interface().(error); err != nil {
		return reflect.Value{}, fmt.Errorf("%s: %w", e.fn, err)
	}
	return out[0], nil
}

// naturalType is the type a dependency was produced as, or nil when the
// parameter's type decides.
func (d wireDep) naturalType() (reflect.Type, error) {
	if d.fn == "" {
		return nil, nil
	}
	f := lookupFunc(d.fn)
	if f == nil {
		return nil, fmt.Errorf("function %q is not registered in this binary", d.fn)
	}
	t := f.ret
	for range d.depth {
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil, fmt.Errorf("element of %v", t)
		}
		t = t.Elem()
	}
	return t, nil
}

func convert(v reflect.Value, t reflect.Type) (reflect.Value, error) {
	if t == nil || v.Type() == t {
		return v, nil
	}
	if !v.Type().AssignableTo(t) {
		return reflect.Value{}, fmt.Errorf("a %v where a %v is wanted", v.Type(), t)
	}
	out := reflect.New(t).Elem()
	out.Set(v)
	return out, nil
}
