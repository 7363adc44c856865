package atoll

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// argSource is one argument as the caller gave it: a value or a ref.
type argSource struct {
	ref *refHandle
	val any
}

// pendingTask is a task this process owns that has not finished: its
// dependencies may be unresolved, it may be queued, running or retrying.
type pendingTask struct {
	spec        *atollpb.TaskSpec
	id          ids.TaskID
	deps        []ids.ObjectID // referenced while the task is pending
	depArgIdx   []int          // index in spec.Args of each dep
	holds       []ids.ObjectID // refs serialised inside inline arguments
	refArgs     int            // arguments given as ObjectRefs (0: a root task)
	returns     []ids.ObjectID
	retriesLeft int // -1: forever
	actor       *actorState
	submitSpan  trace.Span
	stopCancel  func() bool

	// guarded by taskTable.mu
	dispatched bool
	cancelled  bool
	ready      bool // actor calls: dependencies resolved
}

type taskTable struct {
	mu sync.Mutex
	m  map[ids.TaskID]*pendingTask
}

func newTaskTable() *taskTable { return &taskTable{m: map[ids.TaskID]*pendingTask{}} }

func (t *taskTable) get(id ids.TaskID) *pendingTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *taskTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// failAll fails every pending task (shutdown).
func (t *taskTable) failAll(err error, rt *core) {
	t.mu.Lock()
	all := make([]*pendingTask, 0, len(t.m))
	for _, pt := range t.m {
		all = append(all, pt)
	}
	t.mu.Unlock()
	for _, pt := range all {
		rt.finish(pt, errs.ToProto(err))
	}
}

// submit registers a task, takes references to its arguments, and sends
// it once they are all ready. It returns one handle per return value.
// Errors (bad arguments, shutdown) resolve the returns to that error.
func (rt *core) submit(ctx context.Context, spec *atollpb.TaskSpec, args []argSource, cc callConfig, as *actorState) []*refHandle {
	task := ids.NewTaskID()
	spec.TaskId = task.Bytes()
	spec.JobId = rt.jobID.Bytes()
	spec.OwnerId = rt.workerID.Bytes()
	spec.WorkerBinary = rt.workerBinary
	spec.OwnerAddress = rt.nodeID.String()
	if spec.Name == "" {
		spec.Name = spec.Function
	}
	pt := &pendingTask{spec: spec, id: task, actor: as, retriesLeft: int(spec.MaxRetries)}
	handles := make([]*refHandle, spec.NumReturns)
	for i := range handles {
		id := ids.ReturnObjectID(task, i)
		rt.objects.add(id, nil, nil, nil)
		pt.returns = append(pt.returns, id)
		handles[i] = newHandle(rt, id)
	}
	kind := "task"
	if as != nil {
		kind = "actor_task"
	}
	ctx, pt.submitSpan = rt.tracer.Start(ctx, "submit "+spec.Name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("atoll.task_id", task.String()), attribute.String("atoll.function", spec.Function),
			attribute.String("atoll.task_kind", kind)))
	spec.Trace = telemetry.Inject(ctx)

	rt.tasks.mu.Lock()
	rt.tasks.m[task] = pt
	rt.tasks.mu.Unlock()
	if err := rt.buildArgs(pt, args); err != nil {
		rt.finish(pt, errs.ToProto(err))
		return handles
	}
	if as != nil {
		as.enqueue(pt)
	}
	if ctx.Done() != nil {
		pt.stopCancel = context.AfterFunc(ctx, func() { rt.cancelTask(task) })
	}
	remaining := atomic.Int32{}
	remaining.Store(int32(len(pt.deps)) + 1)
	onReady := func() {
		if remaining.Add(-1) == 0 {
			rt.dispatch(pt)
		}
	}
	remaining.Add(int32(len(pt.holds)))
	for _, dep := range pt.deps {
		rt.objects.whenReady(dep, onReady)
	}
	// Refs inside argument values must have values too, to be lent.
	for _, held := range pt.holds {
		if !rt.objects.whenReady(held, onReady) {
			onReady()
		}
	}
	onReady()
	return handles
}

// buildArgs encodes value arguments (large ones go to the store as
// objects the task holds) and takes a reference to every object argument.
func (rt *core) buildArgs(pt *pendingTask, args []argSource) error {
	for i, a := range args {
		if a.ref != nil {
			if a.ref.state.released.Load() {
				return errs.Invalidf("argument %d: ObjectRef %s used after Release", i, a.ref.id.Short())
			}
			if !rt.objects.incRef(a.ref.id) {
				return &errs.ObjectLostError{ObjectID: a.ref.id.String(), Message: "argument object no longer exists"}
			}
			pt.deps = append(pt.deps, a.ref.id)
			pt.depArgIdx = append(pt.depArgIdx, i)
			pt.refArgs++
			pt.spec.Args = append(pt.spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: a.ref.id.Bytes()}}})
			continue
		}
		enc, err := codec.Encode(a.val)
		if err != nil {
			return err
		}
		if rt.inline(len(enc.Data)) {
			data := enc.Data
			if codec.ElemSize(enc.Codec) != 0 {
				data = append([]byte(nil), data...) // raw encodings alias the caller's slice
			}
			if enc.Codec == atollpb.Codec_CODEC_GOB {
				pt.holds = append(pt.holds, containedRefs(data)...)
			}
			pt.spec.Args = append(pt.spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Codec: enc.Codec, Kind: &atollpb.Value_Inline{Inline: data}}}})
			continue
		}
		id, err := rt.putEncoded(context.Background(), enc)
		if err != nil {
			return err
		}
		// The put's one reference is the task's: released when it ends.
		pt.deps = append(pt.deps, id)
		pt.depArgIdx = append(pt.depArgIdx, i)
		pt.spec.Args = append(pt.spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: id.Bytes()}}})
	}
	return nil
}

func (rt *core) inline(n int) bool { return rt.cfg.inlineThreshold >= 0 && n <= rt.cfg.inlineThreshold }

// dispatch runs once every dependency is ready: it inlines small argument
// values, fails the task if an argument failed, and sends it.
func (rt *core) dispatch(pt *pendingTask) {
	rt.tasks.mu.Lock()
	if pt.cancelled || pt.dispatched || rt.tasks.m[pt.id] != pt {
		rt.tasks.mu.Unlock()
		return
	}
	rt.tasks.mu.Unlock()
	for j, dep := range pt.deps {
		value, producer, _, ok := rt.objects.lookup(dep)
		if !ok {
			rt.finish(pt, errs.ToProto(&errs.ObjectLostError{ObjectID: dep.String(), Message: "argument object no longer exists"}))
			return
		}
		if e := value.GetError(); e != nil {
			rt.finish(pt, e) // a failed argument fails the task with the same error
			return
		}
		if producer != nil {
			pt.spec.ArgProducers = append(pt.spec.ArgProducers, producer)
		}
		if inline := value.GetInline(); inline != nil || value.GetStored() == nil {
			pt.spec.Args[pt.depArgIdx[j]] = &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: value}}
		} else {
			ref, st := pt.spec.Args[pt.depArgIdx[j]].GetRef(), value.GetStored()
			ref.Size, ref.NodeId, ref.Codec = st.GetLength(), st.GetNodeId(), st.GetCodec()
			if ref.OwnerAddress = rt.ownerNode(dep); ref.OwnerAddress != "" {
				ref.OwnerId = rt.workerID.Bytes()
			}
		}
	}
	for _, held := range pt.holds {
		if value, _, _, ok := rt.objects.lookup(held); ok {
			pt.spec.Borrowed = append(pt.spec.Borrowed, &atollpb.ReturnObject{ObjectId: held.Bytes(), Value: value})
		}
	}
	rt.tasks.mu.Lock()
	if pt.cancelled {
		rt.tasks.mu.Unlock()
		return
	}
	pt.dispatched = true
	rt.tasks.mu.Unlock()
	pt.spec.NumDependencies = int32(pt.refArgs + len(pt.holds))
	pt.submitSpan.End()
	if pt.actor != nil {
		pt.actor.markReady(rt, pt)
		return
	}
	rt.link.submitTask(pt.spec)
}

// onResult handles a task attempt's result (on the owner actor).
func (rt *core) onResult(res *atollpb.TaskResult) {
	pt := rt.tasks.get(ids.MustFromBytes(res.TaskId))
	if pt == nil || res.Attempt != pt.spec.Attempt {
		return // stale attempt or already finished
	}
	if res.Error != nil {
		if rt.retry(pt, res) {
			return
		}
		rt.finish(pt, res.Error)
		return
	}
	if pt.spec.Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		rt.actors.created(rt, ids.MustFromBytes(pt.spec.ActorId), res.ActorAddress)
	}
	for i, id := range pt.returns {
		if i >= len(res.Returns) {
			rt.objects.resolve(id, errorValue(errs.Invalidf("task %s returned %d values, want %d", pt.spec.Name, len(res.Returns), len(pt.returns))), nil, nil)
			continue
		}
		v := res.Returns[i].Value
		var contained []ids.ObjectID
		for _, c := range v.GetContainedRefs() {
			contained = append(contained, ids.MustObjectID(c.ObjectId))
		}
		rt.objects.resolve(id, v, res.ExecuteSpan, contained)
	}
	rt.complete(pt)
}

func (rt *core) retry(pt *pendingTask, res *atollpb.TaskResult) bool {
	rt.tasks.mu.Lock()
	cancelled := pt.cancelled
	rt.tasks.mu.Unlock()
	if cancelled || pt.retriesLeft == 0 {
		return false
	}
	switch {
	case pt.actor != nil:
		if !res.ActorCrashed && !(pt.spec.RetryExceptions && res.Error.Code == atollpb.ErrorCode_TASK_ERROR) {
			return false
		}
	case res.Error.Code == atollpb.ErrorCode_WORKER_CRASHED, res.Error.Code == atollpb.ErrorCode_NODE_DIED:
	case res.Error.Code == atollpb.ErrorCode_TASK_ERROR && pt.spec.RetryExceptions:
	default:
		return false
	}
	if pt.retriesLeft > 0 {
		pt.retriesLeft--
	}
	spec := proto.Clone(pt.spec).(*atollpb.TaskSpec)
	spec.Attempt++
	pt.spec = spec
	pt.submitSpan.AddEvent("retry", trace.WithAttributes(attribute.Int("atoll.attempt", int(spec.Attempt)),
		attribute.String("atoll.error", res.Error.Message)))
	if pt.actor != nil {
		pt.actor.resend(rt, pt)
		return true
	}
	rt.link.submitTask(spec)
	return true
}

// finish fails a task's returns with e and forgets it.
func (rt *core) finish(pt *pendingTask, e *atollpb.ErrorInfo) {
	if e.TaskName == "" && e.Code == atollpb.ErrorCode_TASK_ERROR {
		e = proto.Clone(e).(*atollpb.ErrorInfo)
		e.TaskName = pt.spec.Name
	}
	for _, id := range pt.returns {
		rt.objects.resolve(id, &atollpb.Value{Codec: atollpb.Codec_CODEC_ERROR, Kind: &atollpb.Value_Error{Error: e}}, nil, nil)
	}
	if pt.spec.Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		rt.actors.died(rt, ids.MustFromBytes(pt.spec.ActorId), e)
	}
	pt.submitSpan.SetStatus(codes.Error, e.Message)
	rt.complete(pt)
}

// complete forgets a finished task and drops its argument references.
func (rt *core) complete(pt *pendingTask) {
	rt.tasks.mu.Lock()
	if rt.tasks.m[pt.id] != pt {
		rt.tasks.mu.Unlock()
		return
	}
	delete(rt.tasks.m, pt.id)
	rt.tasks.mu.Unlock()
	if pt.actor != nil {
		pt.actor.forget(pt)
	}
	if pt.stopCancel != nil {
		pt.stopCancel()
	}
	pt.submitSpan.End() // no-op if dispatch ended it
	rt.objects.decRef(pt.deps...)
	rt.objects.decRef(pt.holds...)
}

// cancelTask cancels a task this process owns: before dispatch it fails at
// once; queued or running, the raylet stops it and reports it cancelled.
func (rt *core) cancelTask(id ids.TaskID) {
	rt.tasks.mu.Lock()
	pt := rt.tasks.m[id]
	if pt == nil || pt.cancelled {
		rt.tasks.mu.Unlock()
		return
	}
	pt.cancelled = true
	dispatched := pt.dispatched
	rt.tasks.mu.Unlock()
	cancelled := errs.ToProto(&errs.CancelledError{TaskName: pt.spec.Name, TaskID: id.String()})
	switch {
	case !dispatched:
		rt.finish(pt, cancelled)
	case pt.actor != nil:
		if pt.actor.unsent(pt) {
			rt.finish(pt, cancelled)
		}
		// A call already sent to the actor runs to completion.
	default:
		rt.link.cancelTask(id)
	}
}

func errorValue(err error) *atollpb.Value {
	return &atollpb.Value{Codec: atollpb.Codec_CODEC_ERROR, Kind: &atollpb.Value_Error{Error: errs.ToProto(err)}}
}
