package atoll

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// Actor methods of zero to six arguments (Method0.., MultiMethod0..) and
// actor types whose constructors take arguments (ActorType1..) are
// generated: zz_generated_methods.go, zz_generated_actortypes.go.

// registerMethod registers m as method name of actor type t; a
// duplicate panics.
func registerMethod[T any](t ActorClass[T], name string, m func(ctx context.Context, instance any, args []registry.Arg, out []any) ([]any, error)) {
	registry.Methods.MustAdd(registry.MethodName(t.actorType().entry.Name, name), &registry.Method{Invoke: m})
}

func instanceOf[T any](instance any) (T, error) {
	t, ok := instance.(T)
	if !ok {
		var zero T
		return zero, errs.Invalidf("actor instance is a %T, not a %T", instance, zero)
	}
	return t, nil
}

// ActorType is a registered actor type whose instances are T values (a
// pointer to your struct, usually) and whose constructor takes no
// argument; ActorType1 to ActorType6 take arguments. Create instances
// with New.
type ActorType[T any] struct {
	entry *registry.ActorType
	opts  []ActorOption
}

// newActorTypeEntry registers an actor type of instances T made by ctor;
// a duplicate name panics.
func newActorTypeEntry[T any](name string, ctor func(ctx context.Context, args []registry.Arg) (any, error)) *registry.ActorType {
	e := &registry.ActorType{Name: name, GoType: reflect.TypeFor[T](), New: ctor}
	registry.ActorTypes.MustAdd(name, e)
	return e
}

// NewActorType registers an actor type whose constructor takes no
// argument. Register at package init so every process of the binary knows
// it.
func NewActorType[T any](name string, ctor func(context.Context) (T, error)) *ActorType[T] {
	e := newActorTypeEntry[T](name, func(ctx context.Context, args []registry.Arg) (any, error) {
		if err := checkArgs(args, 0); err != nil {
			return nil, err
		}
		return ctor(ctx)
	})
	return &ActorType[T]{entry: e}
}

// ActorClass is any registered actor type with instances of type T
// (ActorType or ActorType1 to ActorType6); methods are registered on it.
type ActorClass[T any] interface {
	actorType() *ActorType[T]
}

func (t *ActorType[T]) actorType() *ActorType[T] { return t }

// New creates an actor and returns its handle at once; calls made before
// the actor is running wait for it. Options (ActorOption): ActorName,
// MaxRestarts, MaxTaskRetries, MaxConcurrency, ConcurrencyGroup,
// MaxPendingCalls, WithTaskResources, Spread, OnNode, Detached,
// GetIfExists; they apply after those bound with Options. A name already
// taken by a live actor fails with ErrInvalidArgument, or with GetIfExists
// returns that actor.
func (t *ActorType[T]) New(ctx context.Context, opts ...ActorOption) (ActorHandle[T], error) {
	return newActor[T](ctx, t.entry, nil, t.opts, opts)
}

// Options returns the actor type with opts bound as defaults for each
// actor New creates (Ray's ActorClass.options()); New's own options
// override them. The receiver is unchanged.
func (t *ActorType[T]) Options(opts ...ActorOption) *ActorType[T] {
	return &ActorType[T]{entry: t.entry, opts: bind(t.opts, opts)}
}

// ActorHandle refers to a live actor; copies refer to the same actor.
type ActorHandle[T any] struct {
	st *runtime.Actor
}

// ID returns the actor id in hex.
func (h ActorHandle[T]) ID() string {
	if h.st == nil {
		return ""
	}
	return h.st.ID.String()
}

// Name returns the actor's name ("" for anonymous actors).
func (h ActorHandle[T]) Name() string {
	if h.st == nil {
		return ""
	}
	return h.st.Name
}

func newActor[T any](ctx context.Context, e *registry.ActorType, args []runtime.ArgSource, bound, opts []ActorOption) (ActorHandle[T], error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return ActorHandle[T]{}, err
	}
	cc := actorConfig(bound, opts)
	if cc.maxRestarts < -1 || cc.maxTaskRetries < -1 {
		return ActorHandle[T]{}, errs.Invalidf("MaxRestarts and MaxTaskRetries must be >= -1")
	}
	if err := validateConcurrency(cc); err != nil {
		return ActorHandle[T]{}, err
	}
	if err := checkLifetime(cc); err != nil {
		return ActorHandle[T]{}, err
	}
	var demand map[string]float64
	if cc.resources != nil {
		demand = cc.resources.toMap()
	}
	if err := cc.checkGroup(demand); err != nil {
		return ActorHandle[T]{}, err
	}
	s := rt.Settings()
	id := rt.NewActorID()
	info := &atollpb.ActorInfo{ActorId: id.Bytes(), Name: cc.actorName, Namespace: s.Namespace, ActorType: e.Name,
		State: atollpb.ActorState_ACTOR_PENDING_CREATION, MaxRestarts: int32(cc.maxRestarts), NodeId: rt.NodeID().Bytes(),
		OwnerId: rt.WorkerID().Bytes(), JobId: rt.JobID().Bytes(), OwnerNodeId: rt.NodeID().Bytes()}
	if existing, found, err := registerActor[T](ctx, rt, info, cc.getIfExists); err != nil || found {
		return existing, err
	}
	// A detached actor is not the job's: this process does not kill it
	// when it exits (OwnedLiveActors).
	st := rt.NewActor(id, cc.actorName, e.Name, cc.maxTaskRetries, cc.maxPendingCalls, !cc.detached)
	spec := &atollpb.TaskSpec{
		Type: atollpb.TaskType_ACTOR_CREATION_TASK, Function: e.Name, Name: "create " + e.Name, ActorId: id.Bytes(),
		ActorCreation: &atollpb.ActorCreationSpec{ActorType: e.Name, Name: cc.actorName, MaxRestarts: int32(cc.maxRestarts),
			MaxTaskRetries: int32(cc.maxTaskRetries), Namespace: s.Namespace,
			MaxConcurrency: int32(cc.maxConcurrency), ConcurrencyGroups: cc.concurrencyGroups, MaxPendingCalls: int32(cc.maxPendingCalls),
			Detached: cc.detached},
	}
	spec.Scheduling = cc.scheduling
	if cc.resources != nil {
		spec.Resources = cc.resources.toMap()
	}
	var one [1]*runtime.Ref
	rt.Submit(ctx, one[:0], spec, args, cc.release, nil)
	return ActorHandle[T]{st: st}, nil
}

// GetActor returns a handle to the live actor named name in this
// namespace. It fails with ErrNotFound if there is none, and with
// ErrInvalidArgument if the actor is not of type T.
func GetActor[T any](ctx context.Context, name string) (ActorHandle[T], error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return ActorHandle[T]{}, err
	}
	info, err := rt.GetNamedActor(ctx, name)
	if err != nil {
		return ActorHandle[T]{}, err
	}
	e, ok := registry.ActorTypes.Lookup(info.ActorType)
	if !ok || e.GoType != reflect.TypeFor[T]() {
		return ActorHandle[T]{}, errs.Invalidf("actor %q is a %s, not a %v", name, info.ActorType, reflect.TypeFor[T]())
	}
	id := ids.MustFromBytes(info.ActorId)
	st := rt.NewActor(id, info.Name, info.ActorType, 0, 0, false)
	if info.Address == "" || info.State != atollpb.ActorState_ACTOR_ALIVE {
		// Still being created: its ALIVE event may have been applied
		// before the owner table knew the actor (and dropped), so ask
		// again now that later events find it.
		if again, err := rt.GetNamedActor(ctx, name); err == nil && ids.MustFromBytes(again.ActorId) == id {
			info = again
		}
	}
	if info.Address != "" && info.State == atollpb.ActorState_ACTOR_ALIVE {
		rt.ActorEvent(info)
	}
	return ActorHandle[T]{st: st}, nil
}

// Kill stops an actor for good, whatever its MaxRestarts. Calls from
// this process not yet finished fail with ActorDied at once; other
// callers see it die when the GCS announces it.
func Kill[T any](ctx context.Context, h ActorHandle[T]) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	if h.st == nil {
		return errs.Invalidf("Kill: zero ActorHandle")
	}
	rt.KillActor(h.st)
	return nil
}

// callActor submits a method call: bound are the method's options
// (Options), opts the call's.
func callActor(ctx context.Context, st *runtime.Actor, method string, numReturns int, bound, opts []MethodOption, args ...runtime.ArgSource) []*runtime.Ref {
	return callActorInto(nil, ctx, st, method, numReturns, bound, opts, args...)
}

// callActor1 is callActor of a method with one return, without a slice.
func callActor1(ctx context.Context, st *runtime.Actor, method string, bound, opts []MethodOption, args ...runtime.ArgSource) *runtime.Ref {
	var one [1]*runtime.Ref
	return callActorInto(one[:0], ctx, st, method, 1, bound, opts, args...)[0]
}

// callActorInto is callActor, its refs appended to dst.
func callActorInto(dst []*runtime.Ref, ctx context.Context, st *runtime.Actor, method string, numReturns int, bound, opts []MethodOption, args ...runtime.ArgSource) []*runtime.Ref {
	rt, err := runtime.Running(ctx)
	if err == nil && st == nil {
		err = errs.Invalidf("call on a zero ActorHandle")
	}
	if err != nil {
		return runtime.FailedRefs(numReturns, err)
	}
	cc := methodConfig(bound, opts)
	if err := checkRetries(&cc); err != nil {
		return runtime.FailedRefs(numReturns, err)
	}
	if cc.release, err = st.AcquireCall(ctx); err != nil {
		return runtime.FailedRefs(numReturns, err)
	}
	retries := st.MaxTaskRetries
	if cc.maxRetriesSet {
		retries = cc.maxRetries
	}
	spec := st.CallSpec() // never recycled: an actor call is not packed
	spec.Type, spec.Function, spec.Name, spec.NumReturns = atollpb.TaskType_ACTOR_TASK, st.Function(method), cc.name, int32(numReturns)
	spec.MaxRetries, spec.RetryExceptions, spec.RetryErrors, spec.ActorId, spec.ConcurrencyGroup = int32(retries), cc.retryExceptions, cc.retryErrors, st.IDBytes(), cc.group
	return rt.Submit(ctx, dst, spec, args, cc.release, st)
}

// getIfExistsAttempts bounds the create-or-get rounds of GetIfExists: a
// round fails only when the name's holder died between the GCS refusing
// the name and the lookup, which needs another actor of that name to be
// created and to die meanwhile.
const getIfExistsAttempts = 5

// registerActor registers info with the GCS. With getIfExists, a
// refused registration (the name is taken) returns the live actor that
// holds the name instead (found true): the GCS, which decides who holds a
// name, makes get-or-create race-free.
func registerActor[T any](ctx context.Context, rt *runtime.Runtime, info *atollpb.ActorInfo, getIfExists bool) (existing ActorHandle[T], found bool, err error) {
	for attempt := 1; ; attempt++ {
		err := rt.RegisterActor(ctx, info)
		if err == nil || !getIfExists || !errors.Is(err, errs.ErrInvalidArgument) {
			return ActorHandle[T]{}, false, err
		}
		h, err2 := GetActor[T](ctx, info.Name)
		switch {
		case err2 == nil:
			return h, true, nil
		case !errors.Is(err2, errs.ErrNotFound):
			return ActorHandle[T]{}, false, err2
		case attempt == getIfExistsAttempts:
			return ActorHandle[T]{}, false, fmt.Errorf("GetIfExists: actor %q: the name was taken and then free %d times in a row: %w", info.Name, attempt, err)
		}
		// Refused, yet nobody holds the name: its holder died since.
	}
}
