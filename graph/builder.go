package graph

import (
	"context"
	"fmt"
	"reflect"

	"github.com/atoll-runtime/atoll"
)

// Typed registrations: the builder's Apply functions take these, so a
// graph built with them is type-checked by the compiler.

// Func0 is a registered function with no arguments.
type Func0[R any] struct{ *Func }

// Func1 is a registered function of one argument.
type Func1[A, R any] struct{ *Func }

// Func2 is a registered function of two arguments.
type Func2[A, B, R any] struct{ *Func }

// Func3 is a registered function of three arguments.
type Func3[A, B, C, R any] struct{ *Func }

// FuncN is a registered variadic function.
type FuncN[A, R any] struct{ *Func }

// Register0 registers fn under name (see Register).
func Register0[R any](name string, fn func(context.Context) (R, error)) *Func0[R] {
	return &Func0[R]{Register(name, fn)}
}

// Register1 registers fn under name (see Register).
func Register1[A, R any](name string, fn func(context.Context, A) (R, error)) *Func1[A, R] {
	return &Func1[A, R]{Register(name, fn)}
}

// Register2 registers fn under name (see Register).
func Register2[A, B, R any](name string, fn func(context.Context, A, B) (R, error)) *Func2[A, B, R] {
	return &Func2[A, B, R]{Register(name, fn)}
}

// Register3 registers fn under name (see Register).
func Register3[A, B, C, R any](name string, fn func(context.Context, A, B, C) (R, error)) *Func3[A, B, C, R] {
	return &Func3[A, B, C, R]{Register(name, fn)}
}

// RegisterN registers the variadic fn under name (see Register).
func RegisterN[A, R any](name string, fn func(context.Context, ...A) (R, error)) *FuncN[A, R] {
	return &FuncN[A, R]{Register(name, fn)}
}

// Builder builds a graph from typed calls, as dask.delayed does: each
// call adds a key and returns a Delayed naming it. A Builder is not safe
// for concurrent use.
type Builder struct {
	g    Graph
	seqs map[string]int
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{g: Graph{}, seqs: map[string]int{}} }

// Graph returns a copy of the graph built so far.
func (b *Builder) Graph() Graph { return b.g.Copy() }

// add adds e under a new key name-N.
func (b *Builder) add(name string, e Expr) Key {
	for {
		k := Key(fmt.Sprintf("%s-%d", name, b.seqs[name]))
		b.seqs[name]++
		if _, taken := b.g[k]; !taken {
			b.g[k] = e
			return k
		}
	}
}

// Set adds e under key k, replacing what k held (for keys of your own
// choosing, or graphs merged from elsewhere). It returns k as a Delayed
// of the type the caller says e has; Validate checks it.
func Set[T any](b *Builder, k Key, e Expr) Delayed[T] {
	b.g[k] = e
	return Delayed[T]{b: b, key: k}
}

// Delayed is a value of type T that a key of a builder's graph will hold.
type Delayed[T any] struct {
	b   *Builder
	key Key
}

// Key returns the key holding the value.
func (d Delayed[T]) Key() Key { return d.key }

// Compute computes the value with the builder's graph as it is now.
func (d Delayed[T]) Compute(ctx context.Context, opts ...Option) (T, error) {
	return ComputeOne[T](ctx, d.b.Graph(), d.key, opts...)
}

// Const adds the literal v.
func Const[T any](b *Builder, v T) Delayed[T] {
	return Delayed[T]{b: b, key: b.add("const", Lit(v))}
}

// FromRef adds an object already in the store.
func FromRef[T any](b *Builder, ref atoll.ObjectRef[T]) Delayed[T] {
	return Delayed[T]{b: b, key: b.add("object", Object(ref, reflect.TypeFor[T]()))}
}

// Apply0 adds the call f().
func Apply0[R any](b *Builder, f *Func0[R]) Delayed[R] {
	return Delayed[R]{b: b, key: b.add(f.name, Call(f.name))}
}

// Apply1 adds the call f(a).
func Apply1[A, R any](b *Builder, f *Func1[A, R], a Delayed[A]) Delayed[R] {
	return Delayed[R]{b: b, key: b.add(f.name, Call(f.name, Ref(a.key)))}
}

// Apply2 adds the call f(a, c).
func Apply2[A, B, R any](b *Builder, f *Func2[A, B, R], a Delayed[A], c Delayed[B]) Delayed[R] {
	return Delayed[R]{b: b, key: b.add(f.name, Call(f.name, Ref(a.key), Ref(c.key)))}
}

// Apply3 adds the call f(a, c, d).
func Apply3[A, B, C, R any](b *Builder, f *Func3[A, B, C, R], a Delayed[A], c Delayed[B], d Delayed[C]) Delayed[R] {
	return Delayed[R]{b: b, key: b.add(f.name, Call(f.name, Ref(a.key), Ref(c.key), Ref(d.key)))}
}

// ApplyN adds the call f(xs...).
func ApplyN[A, R any](b *Builder, f *FuncN[A, R], xs ...Delayed[A]) Delayed[R] {
	args := make([]Expr, len(xs))
	for i, x := range xs {
		args[i] = Ref(x.key)
	}
	return Delayed[R]{b: b, key: b.add(f.name, Call(f.name, args...))}
}
