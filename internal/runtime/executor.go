package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// The executor: a worker runs user code, the functions, actor
// constructors and methods the registry names (workerproto.Executor: its
// connection's server calls it).

var (
	_ workerproto.Executor     = (*Worker)(nil)
	_ workerproto.ContextMaker = (*Worker)(nil)
)

type taskKey struct{}

// taskInfo describes the task running under a context, and the runtime
// executing it (FromContext).
type taskInfo struct {
	rt      *Runtime
	id      ids.TaskID
	worker  ids.WorkerID
	actor   bool
	attempt int
}

// String is the task's id (telemetry.TaskID).
func (ti *taskInfo) String() string { return ti.id.String() }

// taskCtx is the context a task runs under: its taskInfo, answered for
// taskKey and telemetry.TaskIDKey, in one allocation with the context
// (where two context.WithValue and the info took three). A task pushed to
// a worker gets one as it is pushed (TaskContext): its cancellation is in
// the same allocation (cancel, which stands for the context.WithCancelCause
// it makes only if the task looks at it; two allocations a task fewer),
// and so are the room for its one result (out, which the registered
// function appends to, where it made a slice) and its result's block
// (result: the result lives until it is encoded, as the context does).
// Anything else execute runs (a simulated worker's task) gets one there,
// around the context it was given, and its result's block apart.
type taskCtx struct {
	context.Context // &cancel, or the context execute was given
	info            taskInfo
	cancel          workerproto.Cancellable
	// out and result: room for what a pushed task returns, and its result.
	out    [1]any
	result resultBlock
}

// TaskContext implements workerproto.ContextMaker.
func (wk *Worker) TaskContext(spec *atollpb.TaskSpec) workerproto.TaskContext {
	c := &taskCtx{info: wk.taskInfo(spec)}
	c.Context = &c.cancel
	return c
}

// Cancel implements workerproto.TaskContext.
func (c *taskCtx) Cancel(cause error) { c.cancel.Cancel(cause) }

// taskInfo is the info of a task of spec run by wk.
func (wk *Worker) taskInfo(spec *atollpb.TaskSpec) taskInfo {
	id, _ := ids.FromBytes(spec.TaskId) // the worker's server takes only tasks with an id
	return taskInfo{rt: wk.Runtime, id: id, worker: wk.workerID, actor: spec.Type == atollpb.TaskType_ACTOR_TASK, attempt: int(spec.Attempt)}
}

func (c *taskCtx) Value(key any) any {
	switch key.(type) {
	case taskKey, telemetry.TaskIDKey:
		return &c.info
	}
	return c.Context.Value(key)
}

// TaskOf describes the task running under ctx: its worker's id and which
// attempt it is; ok is false outside a task.
func TaskOf(ctx context.Context) (worker ids.WorkerID, attempt int, ok bool) {
	if ti, ok := ctx.Value(taskKey{}).(*taskInfo); ok {
		return ti.worker, ti.attempt, true
	}
	return ids.WorkerID{}, 0, false
}

// notRegistered is the error of a task naming what this binary does not
// register.
func notRegistered(what, name string) error {
	return errs.Invalidf("%s", registry.NotRegistered(what, name))
}

// RunTask implements workerproto.Executor.
func (wk *Worker) RunTask(ctx context.Context, spec *atollpb.TaskSpec) *atollpb.TaskResult {
	f, ok := registry.Functions.Lookup(spec.Function)
	if !ok {
		return failed(spec, wk.ids(), notRegistered(registry.Functions.Name(), spec.Function))
	}
	res, _ := wk.execute(ctx, spec, f.Invoke)
	return res
}

// NewActor implements workerproto.Executor: it runs the constructor.
func (wk *Worker) NewActor(ctx context.Context, spec *atollpb.TaskSpec) (any, error) {
	name := spec.GetActorCreation().GetActorType()
	e, ok := registry.ActorTypes.Lookup(name)
	if !ok {
		return nil, notRegistered(registry.ActorTypes.Name(), name)
	}
	var instance any
	res, _ := wk.execute(ctx, spec, func(ctx context.Context, args []registry.Arg, _ []any) ([]any, error) {
		v, err := e.New(ctx, args)
		instance = v
		return nil, err
	})
	if res.Error != nil {
		return nil, errs.FromProto(res.Error)
	}
	return instance, nil
}

// RunActorTask implements workerproto.Executor: it runs one method call.
func (wk *Worker) RunActorTask(ctx context.Context, instance any, spec *atollpb.TaskSpec) (*atollpb.TaskResult, bool) {
	m, ok := registry.Methods.Lookup(spec.Function)
	if !ok {
		typeName, method := registry.SplitMethod(spec.Function)
		return failed(spec, wk.ids(), notRegistered("method of actor type "+typeName, method)), false
	}
	res, panicked := wk.execute(ctx, spec, func(ctx context.Context, args []registry.Arg, out []any) ([]any, error) {
		return m.Invoke(ctx, instance, args, out)
	})
	res.ActorCrashed = panicked
	return res, panicked
}

// ids are the worker's ids, for spans and results.
func (wk *Worker) ids() raylet.Worker { return raylet.Worker{ID: wk.workerID, NodeID: wk.nodeID} }

// execute runs one attempt: fetch arguments, call, store outputs, each
// phase a span under the task's execute span.
func (wk *Worker) execute(ctx context.Context, spec *atollpb.TaskSpec, fn registry.Invoker) (res *atollpb.TaskResult, panicked bool) {
	rt, w := wk.Runtime, wk.ids()
	taskID := ids.MustFromBytes(spec.TaskId)
	if wk.procs != nil {
		defer wk.ran(spec, time.Now())
	}
	own, pushed := ctx.(*taskCtx) // made as it was pushed (TaskContext)
	var room []any                // for what the task returns
	var blk *resultBlock          // and its result (nil: storeOutputs makes one)
	if pushed {
		room, blk = own.out[:0], &own.result
		defer clear(own.out[:])
	}
	ctx = telemetry.Extract(ctx, spec.Trace)
	span := noSpan
	if rt.spanning(ctx) {
		ctx, span = rt.tracer.Start(ctx, "execute "+spec.Name, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithLinks(telemetry.Links(spec.ArgProducers)...),
			trace.WithAttributes(attribute.String("atoll.task_id", taskID.String()), attribute.Int("atoll.attempt", int(spec.Attempt)),
				attribute.String("atoll.worker_id", w.ID.String()), attribute.String("atoll.node_id", w.NodeID.String())))
		defer span.End()
	}
	// The task's info, for FromContext and for its id in each line it
	// logs (telemetry.TaskID).
	if !pushed {
		ctx = &taskCtx{Context: ctx, info: wk.taskInfo(spec)}
	}
	store := wk.store
	// Refs inside the arguments are lent by the task's owner for the
	// task; at its end the result reports those still held
	// (taskStarted, reportBorrows).
	lent := wk.taskStarted(spec)
	defer func() { wk.reportBorrows(spec, lent, res) }()

	var sink *Sink
	if spec.Generator {
		// A streaming generator: its items are reported as it yields
		// them (generator.go); its one return is their count.
		var done func()
		ctx, sink, done = wk.startGenerator(ctx, spec)
		defer done()
		defer func() {
			if res != nil {
				res.GeneratorYielded = sink.Count() // the owner frees what never reached it
			}
		}()
	}
	args, release, err := rt.fetchArgs(ctx, store, spec)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return failed(spec, w, err), false
	}
	out, err, panicked := safeCall(ctx, fn, args, room)
	release() // argument views are invalid from here on
	wk.argsReleased()
	if err == nil && ctx.Err() != nil && spec.Type != atollpb.TaskType_ACTOR_TASK && spec.Type != atollpb.TaskType_ACTOR_CREATION_TASK {
		// cancelled while it ran (atoll.Cancel): Get fails with a
		// CancelledError, as documented, whatever it returned after (a
		// task that returns on cancellation, or whose child did)
		err = context.Canceled
	}
	if err == nil && len(out) != int(spec.NumReturns) {
		err = errs.Invalidf("task %s returned %d values, want %d", spec.Name, len(out), spec.NumReturns)
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return failed(spec, w, &errs.CancelledError{TaskName: spec.Name, TaskID: taskID.String()}), false
		}
		var te *errs.TaskError
		if !errors.As(err, &te) || te.TaskID != taskID.String() {
			te = &errs.TaskError{TaskName: spec.Name, TaskID: taskID.String(), Message: err.Error(), Cause: err}
			if p, ok := err.(*panicError); ok {
				te.Message, te.RemoteStack, te.Cause = p.Error(), p.stack, nil
			} else {
				te.RemoteStack = remoteStack(err, w)
			}
		}
		res := failed(spec, w, te)
		res.ExecuteSpan = rt.inject(ctx)
		return res, panicked
	}
	res, err = wk.storeOutputs(ctx, spec, out, blk)
	out = nil // what the task returned is encoded: its refs are no longer held here
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return failed(spec, w, err), false
	}
	res.ExecuteSpan = rt.inject(ctx)
	return res, false
}

// inject is telemetry.Inject(ctx) when a span could be there.
func (rt *Runtime) inject(ctx context.Context) *atollpb.TraceContext {
	if !rt.spanning(ctx) {
		return nil
	}
	return telemetry.Inject(ctx)
}

func failed(spec *atollpb.TaskSpec, w raylet.Worker, err error) *atollpb.TaskResult {
	e := errs.ToProto(err)
	if e.TaskName == "" {
		e.TaskName = spec.Name
	}
	if len(e.TaskId) == 0 {
		e.TaskId = spec.TaskId
	}
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: e, WorkerId: w.ID.Bytes()}
}

// remoteStack is the stack to report with a task's error: the one the
// error recorded where it was made (atoll.Errorf, github.com/pkg/errors),
// or else this goroutine's, where the runtime received the error.
func remoteStack(err error, w raylet.Worker) string {
	if s, ok := errs.StackOf(err); ok {
		return fmt.Sprintf("error made at (worker %s, node %s):\n%s", w.ID.Short(), w.NodeID.Short(), s)
	}
	return fmt.Sprintf("no stack in the error (atoll.Errorf records one); worker %s, node %s, where the runtime received it:\n%s",
		w.ID.Short(), w.NodeID.Short(), debug.Stack())
}

// panicError is a recovered panic with the stack of the panicking
// goroutine.
type panicError struct {
	value any
	stack string
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

func safeCall(ctx context.Context, fn registry.Invoker, args []registry.Arg, room []any) (out []any, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			out, err, panicked = nil, &panicError{value: r, stack: string(debug.Stack())}, true
		}
	}()
	out, err = fn(ctx, args, room)
	return out, err, false
}

// fetchArgs resolves a task's arguments: inline values as they are,
// objects as pinned views of the store. release drops the pins.
func (rt *Runtime) fetchArgs(ctx context.Context, store storeAPI, spec *atollpb.TaskSpec) ([]registry.Arg, func(), error) {
	args := make([]registry.Arg, len(spec.Args))
	var want []ids.ObjectID
	var slots []int
	var remote []*atollpb.ObjectRef
	for i, a := range spec.Args {
		if v := a.GetValue(); v != nil {
			args[i] = registry.Arg{Codec: v.Codec, Data: v.GetInline(), Scope: rt}
			continue
		}
		ref := a.GetRef()
		want = append(want, ids.MustObjectID(ref.GetObjectId()))
		slots = append(slots, i)
		if n := ref.GetNodeId(); len(n) > 0 && ids.MustFromBytes(n) != rt.nodeID {
			remote = append(remote, ref)
		}
	}
	for _, b := range spec.Borrowed {
		if rt.isRemote(b.Value) {
			r := refOf(ids.MustObjectID(b.ObjectId), b.Value, spec.OwnerAddress)
			r.OwnerId = spec.OwnerId
			remote = append(remote, r)
		}
	}
	if len(want) == 0 && len(remote) == 0 {
		return args, func() {}, nil
	}
	span := noSpan
	if rt.spanning(ctx) {
		_, span = rt.tracer.Start(ctx, "fetch_args "+spec.Name, trace.WithAttributes(attribute.Int("atoll.objects", len(want)),
			attribute.Int("atoll.remote_objects", len(remote))))
		defer span.End()
	}
	if len(remote) > 0 {
		if err := rt.link.fetch(ctx, remote); err != nil {
			return nil, nil, err
		}
	}
	if len(want) == 0 {
		return args, func() {}, nil
	}
	objs, err := store.Get(ctx, want, 0)
	if err != nil {
		return nil, nil, err
	}
	var pinned []ids.ObjectID
	var size int
	for j, o := range objs {
		if o.ID.IsZero() {
			store.Release(pinned...)
			return nil, nil, &errs.ObjectLostError{ObjectID: want[j].String(), Message: "argument not in the object store"}
		}
		pinned = append(pinned, o.ID)
		args[slots[j]] = registry.Arg{Codec: o.Codec, Data: o.Data, Scope: rt}
		size += len(o.Data)
	}
	span.SetAttributes(attribute.Int("atoll.size_bytes", size))
	return args, func() { store.Release(pinned...) }, nil
}

// storeOutputs encodes a task's return values, small ones inline in its
// result, large ones written into the object store, and returns the
// result (its ExecuteSpan left to the caller).
//
// Refs inside the values: the objects this worker created are handed
// over to the task's owner (transferred) and the references the encoding
// took are dropped (handOver).
//
// The result, its returns' messages and the value of its only return are
// blk (a resultBlock: a pushed task's is in its context's allocation;
// nil, one of its own); a task of several returns has each return's value
// in an allocation of its own (a valueBlock).
func (wk *Worker) storeOutputs(ctx context.Context, spec *atollpb.TaskSpec, out []any, blk *resultBlock) (res *atollpb.TaskResult, err error) {
	rt, store := wk.Runtime, wk.store
	if rt.spanning(ctx) {
		_, span := rt.tracer.Start(ctx, "store_outputs "+spec.Name, trace.WithAttributes(attribute.Int("atoll.objects", len(out))))
		defer span.End()
	}
	task := ids.MustFromBytes(spec.TaskId)
	if blk == nil {
		blk = new(resultBlock)
	}
	blk.init(len(out))
	_, workerID, _ := rt.ownIDs()
	res = &blk.res
	res.TaskId, res.Attempt, res.WorkerId = spec.TaskId, spec.Attempt, workerID
	inlined := 0
	var encRefs []ids.ObjectID
	defer func() {
		transferred, herr := wk.handOver(spec, encRefs, err != nil)
		if herr != nil && err == nil {
			res, err = nil, fmt.Errorf("task %s: %w", spec.Name, herr)
		}
		if err == nil {
			res.Transferred = transferred
		}
	}()
	for i, v := range out {
		id := ids.ReturnObjectID(task, i)
		enc, value, refs, err := encodeOutput(v, blk.value(i))
		encRefs = append(encRefs, refs...)
		if err != nil {
			return nil, err
		}
		if err := rt.placeOutput(ctx, store, spec, id, enc, value, &inlined); err != nil {
			return nil, err
		}
		blk.set(i, id, &value.val)
	}
	return res, nil
}

// resultBlock is a task's result and its returns' messages, allocated
// together: one return's, with its value, in the block itself, more in a
// slice of their own. A worker's result is encoded into a frame
// (in-process workers' too), so nothing keeps the value, and with it the
// block, once it is sent; the simulator hands results over as they are,
// and its owners keep the block for as long as they keep the value.
type resultBlock struct {
	res  atollpb.TaskResult
	one  [1]*atollpb.ReturnObject
	ret  returnBlock
	val  valueBlock
	more []returnBlock
}

// returnBlock is one return's message and the bytes of its id.
type returnBlock struct {
	ret atollpb.ReturnObject
	id  ids.ObjectID
}

// init readies a block no result was built in for one of n returns.
func (b *resultBlock) init(n int) {
	switch n {
	case 0:
	case 1:
		b.res.Returns = b.one[:]
	default:
		b.res.Returns = make([]*atollpb.ReturnObject, n)
		b.more = make([]returnBlock, n)
	}
}

// value is room for return i's value in the block (nil: none there).
func (b *resultBlock) value(i int) *valueBlock {
	if i == 0 && b.more == nil {
		return &b.val
	}
	return nil
}

// set makes return i the object id with value.
func (b *resultBlock) set(i int, id ids.ObjectID, value *atollpb.Value) {
	r := &b.ret
	if b.more != nil {
		r = &b.more[i]
	}
	r.id = id
	r.ret.ObjectId, r.ret.Value = r.id[:], value
	b.res.Returns[i] = &r.ret
}

// valueBlock is an output's value and its inline kind, allocated
// together.
type valueBlock struct {
	val atollpb.Value
	inl atollpb.Value_Inline
}

// encodeOutput encodes v, a value a task produces (a return or a
// generator's item), into value (nil: a new one), listing the refs it
// holds: the encoding took a reference to each.
func encodeOutput(v any, value *valueBlock) (enc codec.Encoded, _ *valueBlock, refs []ids.ObjectID, err error) {
	enc, err = codec.Encode(v)
	if err != nil {
		return enc, nil, nil, err
	}
	if value == nil {
		value = new(valueBlock)
	}
	value.val.Codec = enc.Codec
	if enc.Codec == atollpb.Codec_CODEC_GOB {
		refs = containedRefs(enc.Data)
		for _, c := range refs {
			value.val.ContainedRefs = append(value.val.ContainedRefs, &atollpb.ObjectRef{ObjectId: c.Bytes()})
		}
	}
	return enc, value, refs, nil
}

// placeOutput sets value's kind: inline if enc is small and *inlined (the
// bytes the task's message carries inline so far) stays within
// MaxInlineTotal, else stored as object id, owned by the task's owner. A
// retry produces its values again under the same ids: one still stored
// from the attempt before is the same value.
func (rt *Runtime) placeOutput(ctx context.Context, store storeAPI, spec *atollpb.TaskSpec, id ids.ObjectID, enc codec.Encoded, value *valueBlock, inlined *int) error {
	if rt.inline(len(enc.Data)) && *inlined+len(enc.Data) <= MaxInlineTotal {
		*inlined += len(enc.Data)
		data := enc.Data
		if codec.ElemSize(enc.Codec) != 0 {
			data = append([]byte(nil), data...) // may alias an argument view
		}
		value.inl.Inline = data
		value.val.Kind = &value.inl
		return nil
	}
	ownerID, _ := ids.FromBytes(spec.OwnerId)
	if err := store.PutOwned(ctx, id, enc.Codec, enc.Data, ownerID); err != nil && !errors.Is(err, objectstore.ErrObjectExists) {
		return err
	}
	value.val.Kind = rt.storedValue(id, enc.Codec, len(enc.Data)).Kind
	return nil
}
