package graph

import (
	"context"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// The two atoll functions every graph task runs as. The first argument is
// the task spec (an atollpb.GraphTask), the rest are the task's
// dependencies, resolved by atoll before the task runs: views of the
// object store, decoded here by reflect type (a []float64 parameter gets
// a zero-copy view).
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
		return nil, errs.Malformedf(specWhat, "a task without arguments")
	}
	wt, err := decodeTask(args[0].Data, len(args)-1, multi)
	if err != nil {
		return nil, err
	}
	key := Key(wt.Key)
	cbs := make([]TaskCallback, len(wt.Callbacks))
	states := make([]any, len(wt.Callbacks))
	info := make([]TaskInfo, len(wt.Callbacks))
	for i, c := range wt.Callbacks {
		if cbs[i], err = errs.Lookup(taskCallbacks, c.Name); err != nil {
			return nil, fmt.Errorf("graph key %q: %w", key, err)
		}
		info[i] = TaskInfo{Key: key, Hash: wt.Hash, Param: c.Param}
	}
	for i, cb := range cbs {
		if err := guardCallback(wt.Callbacks[i].Name, key, func() { states[i] = cb.PreTask(ctx, info[i]) }); err != nil {
			return nil, err
		}
	}
	ev := evaluator{ctx: ctx, key: key, deps: args[1:], types: wt.Deps}
	v, err := ev.eval(wt.Expr, nil)
	if err != nil {
		return nil, fmt.Errorf("graph key %q: %w", key, err)
	}
	result := v.Interface()
	for i, cb := range cbs {
		if err := guardCallback(wt.Callbacks[i].Name, key, func() { cb.PostTask(ctx, info[i], result, states[i]) }); err != nil {
			return nil, err
		}
	}
	if !multi {
		out, err := encodeResult(result, args)
		if err != nil {
			return nil, fmt.Errorf("graph key %q: %w", key, err)
		}
		return []atoll.Raw{out}, nil
	}
	nret := int(wt.NumReturns)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array || v.Len() != nret {
		return nil, errs.Invalidf("graph key %q: a MultiReturn task of %d outputs returned %v", key, nret, describe(v))
	}
	outs := make([]atoll.Raw, nret)
	for i := range outs {
		if outs[i], err = encodeResult(v.Index(i).Interface(), args); err != nil {
			return nil, fmt.Errorf("graph key %q: output %d: %w", key, i, err)
		}
	}
	return outs, nil
}

// guardCallback runs a task callback's method: a panic of it is a
// FunctionError naming the callback (Op "task callback").
func guardCallback(name string, key Key, f func()) (err error) {
	defer errs.RecoverFunction(&err, "task callback", name, string(key))
	f()
	return nil
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
	key   Key // the task's key, for FunctionErrors
	deps  []atoll.Raw
	types []*atollpb.GraphDep
}

// eval evaluates e (checked by checkTask: its slots and indexes are in
// range). target is the type the value goes to (a parameter's type, a
// list's element type), or nil where e has a type of its own (a task's
// result, a dependency computed by a task).
func (ev *evaluator) eval(e *atollpb.GraphExpr, target reflect.Type) (reflect.Value, error) {
	switch e.Kind {
	case atollpb.GraphExpr_CALL:
		v, err := ev.call(e)
		if err != nil {
			return reflect.Value{}, err
		}
		return convert(v, target)
	case atollpb.GraphExpr_DEP:
		t, err := naturalType(ev.types[e.Index])
		if err != nil {
			return reflect.Value{}, err
		}
		if t == nil {
			t = target
		}
		if t == nil {
			return reflect.Value{}, errs.Malformedf(specWhat, "dependency %d has no type to decode it as", e.Index)
		}
		d := ev.deps[e.Index]
		v, err := codec.DecodeType(d.Codec, d.Data, t)
		if err != nil {
			return reflect.Value{}, err
		}
		return convert(v, target)
	case atollpb.GraphExpr_LITERAL:
		if target == nil {
			return reflect.Value{}, errs.Malformedf(specWhat, "a literal has no type to decode it as")
		}
		return codec.DecodeType(e.Codec, e.Data, target)
	case atollpb.GraphExpr_LIST:
		if target == nil || target.Kind() != reflect.Slice {
			return reflect.Value{}, errs.Invalidf("a list passed as %v, not a slice", typeName(target))
		}
		s := reflect.MakeSlice(target, len(e.Args), len(e.Args))
		for i, a := range e.Args {
			v, err := ev.eval(a, target.Elem())
			if err != nil {
				return reflect.Value{}, err
			}
			s.Index(i).Set(v)
		}
		return s, nil
	case atollpb.GraphExpr_ITEM:
		base, err := ev.eval(e.Args[0], nil)
		if err != nil {
			return reflect.Value{}, err
		}
		if base.Kind() != reflect.Slice && base.Kind() != reflect.Array {
			return reflect.Value{}, errs.Invalidf("Item of a %v", base.Type())
		}
		if int(e.Index) >= base.Len() {
			return reflect.Value{}, errs.Invalidf("Item %d of a %v of %d elements", e.Index, base.Type(), base.Len())
		}
		return convert(base.Index(int(e.Index)), target)
	}
	return reflect.Value{}, errs.Malformedf(specWhat, "unknown expression kind %d", e.Kind)
}

func (ev *evaluator) call(e *atollpb.GraphExpr) (reflect.Value, error) {
	f, err := errs.Lookup(funcs, e.Func)
	if err != nil {
		return reflect.Value{}, err
	}
	if n := len(e.Args); n < len(f.params)-1 || !f.variadic && n != len(f.params) || e.Spread && (!f.variadic || n != len(f.params)) {
		return reflect.Value{}, errs.Invalidf("%s: called with %d arguments (spread %v), it takes %d (variadic %v)", e.Func, n, e.Spread, len(f.params), f.variadic)
	}
	in := make([]reflect.Value, 1+len(e.Args))
	in[0] = reflect.ValueOf(ev.ctx)
	last := len(f.params) - 1
	for i, a := range e.Args {
		pt := f.params[min(i, last)]
		if f.variadic && i >= last && !e.Spread {
			pt = pt.Elem()
		}
		v, err := ev.eval(a, pt)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("%s argument %d: %w", e.Func, i, err)
		}
		in[1+i] = v
	}
	return ev.invoke(f, e, in)
}

// invoke calls the registered function f: its error, or its panic, is a
// FunctionError naming it and the task's key.
func (ev *evaluator) invoke(f *Func, e *atollpb.GraphExpr, in []reflect.Value) (_ reflect.Value, err error) {
	defer errs.RecoverFunction(&err, "", e.Func, string(ev.key))
	var out []reflect.Value
	if e.Spread {
		out = f.fn.CallSlice(in)
	} else {
		out = f.fn.Call(in)
	}
	if ferr, _ := out[1].Interface().(error); ferr != nil {
		return reflect.Value{}, errs.FunctionFailed("", e.Func, string(ev.key), ferr)
	}
	return out[0], nil
}

// naturalType is the type a dependency was produced as, or nil when the
// parameter's type decides.
func naturalType(d *atollpb.GraphDep) (reflect.Type, error) {
	if d.Func == "" {
		return nil, nil
	}
	f, err := errs.Lookup(funcs, d.Func)
	if err != nil {
		return nil, err
	}
	t := f.ret
	for range d.Depth {
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil, errs.Invalidf("an element of %v, the result of %s", t, d.Func)
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
		return reflect.Value{}, errs.Invalidf("a %v where a %v is wanted", v.Type(), t)
	}
	out := reflect.New(t).Elem()
	out.Set(v)
	return out, nil
}
