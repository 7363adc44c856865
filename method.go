package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/errs"
)

func instanceOf[T any](instance any) (T, error) {
	t, ok := instance.(T)
	if !ok {
		var zero T
		return zero, errs.Invalidf("actor instance is a %T, not a %T", instance, zero)
	}
	return t, nil
}

// Method0 is a registered actor method with no arguments.
type Method0[T, R any] struct{ name string }

// NewMethod0 registers fn as method name of actor type t. A method
// expression fits: NewMethod0(CounterType, "Get", (*Counter).Get).
func NewMethod0[T, R any](t ActorClass[T], name string, fn func(T, context.Context) (R, error)) *Method0[T, R] {
	registerMethod(t.actorType().entry, name, func(ctx context.Context, instance any, args []argData) ([]any, error) {
		if err := checkArgs(args, 0); err != nil {
			return nil, err
		}
		self, err := instanceOf[T](instance)
		if err != nil {
			return nil, err
		}
		r, err := fn(self, ctx)
		return []any{r}, err
	})
	return &Method0[T, R]{name: name}
}

// Remote calls the method on the actor h. Calls from one caller run in
// the order they were made.
func (m *Method0[T, R]) Remote(ctx context.Context, h ActorHandle[T], opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: callActor(ctx, h.st, m.name, 1, opts)[0]}
}

// Method1 is a registered actor method of one argument.
type Method1[T, A, R any] struct{ name string }

// NewMethod1 registers fn as method name of actor type t.
func NewMethod1[T, A, R any](t ActorClass[T], name string, fn func(T, context.Context, A) (R, error)) *Method1[T, A, R] {
	registerMethod(t.actorType().entry, name, func(ctx context.Context, instance any, args []argData) ([]any, error) {
		if err := checkArgs(args, 1); err != nil {
			return nil, err
		}
		self, err := instanceOf[T](instance)
		if err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		r, err := fn(self, ctx, a)
		return []any{r}, err
	})
	return &Method1[T, A, R]{name: name}
}

// Remote calls the method on the actor h (see Method0.Remote).
func (m *Method1[T, A, R]) Remote(ctx context.Context, h ActorHandle[T], a Arg[A], opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: callActor(ctx, h.st, m.name, 1, opts, a.taskArg())[0]}
}

// Method2 is a registered actor method of two arguments.
type Method2[T, A, B, R any] struct{ name string }

// NewMethod2 registers fn as method name of actor type t.
func NewMethod2[T, A, B, R any](t ActorClass[T], name string, fn func(T, context.Context, A, B) (R, error)) *Method2[T, A, B, R] {
	registerMethod(t.actorType().entry, name, func(ctx context.Context, instance any, args []argData) ([]any, error) {
		if err := checkArgs(args, 2); err != nil {
			return nil, err
		}
		self, err := instanceOf[T](instance)
		if err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		b, err := arg[B](args, 1)
		if err != nil {
			return nil, err
		}
		r, err := fn(self, ctx, a, b)
		return []any{r}, err
	})
	return &Method2[T, A, B, R]{name: name}
}

// Remote calls the method on the actor h (see Method0.Remote).
func (m *Method2[T, A, B, R]) Remote(ctx context.Context, h ActorHandle[T], a Arg[A], b Arg[B], opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: callActor(ctx, h.st, m.name, 1, opts, a.taskArg(), b.taskArg())[0]}
}
