package atoll

import (
	"context"
	"fmt"
	"reflect"
	"runtime"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// actorTypeEntry is a registered actor type: its constructor and methods.
type actorTypeEntry struct {
	name    string
	goType  reflect.Type
	ctor    func(ctx context.Context, args []argData) (any, error)
	methods map[string]methodInvoker
}

// methodInvoker calls a method on an actor instance.
type methodInvoker func(ctx context.Context, instance any, args []argData) ([]any, error)

func registerActorType(e *actorTypeEntry) {
	registry.Lock()
	defer registry.Unlock()
	if e.name == "" {
		panic("atoll: an actor type needs a name")
	}
	if _, dup := registry.actors[e.name]; dup {
		panic(fmt.Sprintf("atoll: actor type %q registered twice", e.name))
	}
	registry.actors[e.name] = e
}

func lookupActorType(name string) *actorTypeEntry {
	registry.RLock()
	defer registry.RUnlock()
	return registry.actors[name]
}

func registerMethod(t *actorTypeEntry, name string, m methodInvoker) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := t.methods[name]; dup {
		panic(fmt.Sprintf("atoll: method %s.%s registered twice", t.name, name))
	}
	t.methods[name] = m
}

// ActorType is a registered actor type whose instances are T values (a
// pointer to your struct, usually) and whose constructor takes no
// argument; ActorType1 to ActorType6 take arguments. Create instances
// with New.
type ActorType[T any] struct {
	entry *actorTypeEntry
	opts  []ActorOption
}

// newActorTypeEntry registers an actor type of instances T made by ctor.
func newActorTypeEntry[T any](name string, ctor func(ctx context.Context, args []argData) (any, error)) *actorTypeEntry {
	e := &actorTypeEntry{name: name, goType: reflect.TypeFor[T](), methods: map[string]methodInvoker{}, ctor: ctor}
	registerActorType(e)
	return e
}

// NewActorType registers an actor type whose constructor takes no
// argument. Register at package init so every process of the binary knows
// it.
func NewActorType[T any](name string, ctor func(context.Context) (T, error)) *ActorType[T] {
	e := newActorTypeEntry[T](name, func(ctx context.Context, args []argData) (any, error) {
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
	st *actorState
}

// actorState is what a handle knows of its actor. The caller side of the
// actor (its address, its death, the calls waiting to be sent in order)
// is the owner table's (owner.Table).
type actorState struct {
	id             ids.ActorID
	name           string
	typeName       string
	maxTaskRetries int
	// pending bounds this process's calls in flight (MaxPendingCalls).
	pending pendingCalls
}

// newActorState registers a handle to actor id with the owner table; the
// table forgets the handle when the garbage collector finds it
// unreachable (the cleanup only posts a message).
func newActorState(rt *core, id ids.ActorID, name, typeName string, maxTaskRetries int, owned bool) *actorState {
	st := &actorState{id: id, name: name, typeName: typeName, maxTaskRetries: maxTaskRetries}
	rt.owner.do(func(t *owner.Table) { t.AddActor(id, name, owned) })
	runtime.AddCleanup(st, func(rt *core) {
		if !rt.closed.Load() {
			rt.system.Root.Send(rt.ownerPID, &actorHandleDropped{id: id})
		}
	}, rt)
	return st
}

// actorHandleDropped is posted to the owner actor when a handle is
// garbage.
type actorHandleDropped struct{ id ids.ActorID }

// ID returns the actor id in hex.
func (h ActorHandle[T]) ID() string {
	if h.st == nil {
		return ""
	}
	return h.st.id.String()
}

// Name returns the actor's name ("" for anonymous actors).
func (h ActorHandle[T]) Name() string {
	if h.st == nil {
		return ""
	}
	return h.st.name
}

func newActor[T any](ctx context.Context, e *actorTypeEntry, args []argSource, bound, opts []ActorOption) (ActorHandle[T], error) {
	rt, err := running()
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
	if (cc.maxConcurrency > 1 || len(cc.concurrencyGroups) > 0) && rt.cfg.workerMode == InProcessWorkers {
		return ActorHandle[T]{}, errs.Invalidf("MaxConcurrency and ConcurrencyGroup need worker processes: this driver runs actors on goroutines (WithWorkerMode(InProcessWorkers))")
	}
	id := ids.NewActorID()
	info := &atollpb.ActorInfo{ActorId: id.Bytes(), Name: cc.actorName, Namespace: rt.cfg.namespace, ActorType: e.name,
		State: atollpb.ActorState_ACTOR_PENDING_CREATION, MaxRestarts: int32(cc.maxRestarts), NodeId: rt.nodeID.Bytes(),
		OwnerId: rt.workerID.Bytes(), JobId: rt.jobID.Bytes()}
	if existing, found, err := registerActor[T](ctx, rt, info, cc.getIfExists); err != nil || found {
		return existing, err
	}
	// A detached actor is not the job's: this process does not kill it
	// when it exits (OwnedLiveActors).
	st := newActorState(rt, id, cc.actorName, e.name, cc.maxTaskRetries, !cc.detached)
	if cc.maxPendingCalls > 0 {
		st.pending = make(pendingCalls, cc.maxPendingCalls)
	}
	spec := &atollpb.TaskSpec{
		Type: atollpb.TaskType_ACTOR_CREATION_TASK, Function: e.name, Name: "create " + e.name, ActorId: id.Bytes(),
		ActorCreation: &atollpb.ActorCreationSpec{ActorType: e.name, Name: cc.actorName, MaxRestarts: int32(cc.maxRestarts),
			MaxTaskRetries: int32(cc.maxTaskRetries), Namespace: rt.cfg.namespace,
			MaxConcurrency: int32(cc.maxConcurrency), ConcurrencyGroups: cc.concurrencyGroups, MaxPendingCalls: int32(cc.maxPendingCalls),
			Detached: cc.detached},
	}
	spec.Scheduling = cc.scheduling
	if cc.resources != nil {
		spec.Resources = cc.resources.toMap()
	}
	rt.submit(ctx, spec, args, cc, nil)
	return ActorHandle[T]{st: st}, nil
}

// GetActor returns a handle to the live actor named name in this
// namespace. It fails with ErrNotFound if there is none, and with
// ErrInvalidArgument if the actor is not of type T.
func GetActor[T any](ctx context.Context, name string) (ActorHandle[T], error) {
	rt, err := running()
	if err != nil {
		return ActorHandle[T]{}, err
	}
	info, err := rt.gcs.GetNamedActor(ctx, rt.cfg.namespace, name)
	if err != nil {
		return ActorHandle[T]{}, err
	}
	e := lookupActorType(info.ActorType)
	if e == nil || e.goType != reflect.TypeFor[T]() {
		return ActorHandle[T]{}, errs.Invalidf("actor %q is a %s, not a %v", name, info.ActorType, reflect.TypeFor[T]())
	}
	id := ids.MustFromBytes(info.ActorId)
	st := newActorState(rt, id, info.Name, info.ActorType, 0, false)
	if info.Address == "" || info.State != atollpb.ActorState_ACTOR_ALIVE {
		// Still being created: its ALIVE event may have been applied
		// before the owner table knew the actor (and dropped), so ask
		// again now that later events find it.
		if again, err := rt.gcs.GetNamedActor(ctx, rt.cfg.namespace, name); err == nil && ids.MustFromBytes(again.ActorId) == id {
			info = again
		}
	}
	if info.Address != "" && info.State == atollpb.ActorState_ACTOR_ALIVE {
		rt.owner.do(func(t *owner.Table) { t.ActorEvent(info) })
	}
	return ActorHandle[T]{st: st}, nil
}

// Kill stops an actor for good, whatever its MaxRestarts. Calls from
// this process not yet finished fail with ActorDied at once; other
// callers see it die when the GCS announces it.
func Kill[T any](ctx context.Context, h ActorHandle[T]) error {
	rt, err := running()
	if err != nil {
		return err
	}
	if h.st == nil {
		return errs.Invalidf("Kill: zero ActorHandle")
	}
	const reason = "killed by atoll.Kill"
	rt.owner.do(func(t *owner.Table) { t.ActorKilled(h.st.id, reason) })
	rt.link.killActor(&atollpb.KillActor{ActorId: h.st.id.Bytes(), NoRestart: true, Reason: reason})
	return nil
}

// callActor submits a method call: bound are the method's options
// (Options), opts the call's.
func callActor(ctx context.Context, st *actorState, method string, numReturns int, bound, opts []MethodOption, args ...argSource) []*refHandle {
	rt, err := running()
	if err == nil && st == nil {
		err = errs.Invalidf("call on a zero ActorHandle")
	}
	if err != nil {
		return failedHandles(numReturns, err)
	}
	cc := methodConfig(bound, opts)
	if err := checkRetries(cc); err != nil {
		return failedHandles(numReturns, err)
	}
	if st.pending != nil {
		if err := st.pending.acquire(ctx); err != nil {
			return failedHandles(numReturns, err)
		}
		cc.release = st.pending.release
	}
	retries := st.maxTaskRetries
	if cc.maxRetriesSet {
		retries = cc.maxRetries
	}
	spec := &atollpb.TaskSpec{
		Type: atollpb.TaskType_ACTOR_TASK, Function: st.typeName + "." + method, Name: cc.name, NumReturns: int32(numReturns),
		MaxRetries: int32(retries), RetryExceptions: cc.retryExceptions, ActorId: st.id.Bytes(), ConcurrencyGroup: cc.group,
	}
	return rt.submit(ctx, spec, args, cc, st)
}

// NewActor implements raylet.Executor: it runs the constructor.
func (ex *executor) NewActor(ctx context.Context, w raylet.Worker, spec *atollpb.TaskSpec) (any, error) {
	rt := (*core)(ex)
	e := lookupActorType(spec.GetActorCreation().GetActorType())
	if e == nil {
		return nil, notRegistered("actor type", spec.GetActorCreation().GetActorType())
	}
	var instance any
	res, _ := rt.execute(ctx, w, spec, func(ctx context.Context, args []argData) ([]any, error) {
		v, err := e.ctor(ctx, args)
		instance = v
		return nil, err
	})
	if res.Error != nil {
		return nil, errs.FromProto(res.Error)
	}
	return instance, nil
}

// RunActorTask implements raylet.Executor: it runs one method call.
func (ex *executor) RunActorTask(ctx context.Context, w raylet.Worker, instance any, spec *atollpb.TaskSpec) (*atollpb.TaskResult, bool) {
	rt := (*core)(ex)
	typeName, method := splitMethod(spec.Function)
	e := lookupActorType(typeName)
	var m methodInvoker
	if e != nil {
		registry.RLock()
		m = e.methods[method]
		registry.RUnlock()
	}
	if m == nil {
		return failed(spec, w, notRegistered("method of actor type "+typeName, method)), false
	}
	res, panicked := rt.execute(ctx, w, spec, func(ctx context.Context, args []argData) ([]any, error) {
		return m(ctx, instance, args)
	})
	res.ActorCrashed = panicked
	return res, panicked
}

func splitMethod(fn string) (typeName, method string) {
	for i := len(fn) - 1; i >= 0; i-- {
		if fn[i] == '.' {
			return fn[:i], fn[i+1:]
		}
	}
	return fn, ""
}
