package runtime

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// ArgSource is one argument as the caller gave it: a value or a ref.
type ArgSource struct {
	Ref *Ref
	Val any
}

// Submit builds a task's arguments (large values go to the store as
// objects the task holds) and hands it to the owner, which sends it once
// its arguments are ready. It returns one ref per return value, appended
// to dst (a caller's array for one return saves a slice a task). Errors
// (bad arguments, shutdown) resolve the returns to that error. release, if
// set, is called once the task finishes (MaxPendingCalls); as is the
// actor of an actor call, nil for a task or an actor's creation.
//
// Submit owns spec from then on: the caller must not read, change or keep
// it (a task's spec goes back to a pool once the owner has packed it;
// specpack.NewSpec takes one from there).
func (rt *Runtime) Submit(ctx context.Context, dst []*Ref, spec *atollpb.TaskSpec, args []ArgSource, release func(), as *Actor) []*Ref {
	rt.wakeLone() // this task may wait for the result of the one before
	task := rt.newTaskID()
	spec.TaskId = append(spec.TaskId[:0], task[:]...)
	spec.JobId, spec.OwnerId, spec.OwnerAddress = rt.ownIDs()
	spec.WorkerBinary, spec.WorkerBinarySha256 = rt.binary()
	if spec.Name == "" {
		spec.Name = spec.Function
	}
	kind := "task"
	if as != nil {
		kind = "actor_task"
	}
	// A task with nothing to end, forget or free when it finishes has
	// no taskAttach: the owner then sends no Dispatched or Finished for
	// it. The simulator's checks count every task's Finished. A task
	// whose only such thing is its context's watch has the watch as
	// its attach, made before the owner can finish it: no taskAttach
	// for the many tasks a program submits under a cancellable context.
	var att *taskAttach
	var watchOnly *contextWatch
	spanning := rt.spanning(ctx)
	switch {
	case spanning || release != nil || rt.sim != nil:
		att = &taskAttach{span: noSpan, task: task}
	case ctx.Done() != nil:
		watchOnly = rt.watchContext(ctx)
	}
	if spanning {
		ctx, att.span = rt.tracer.Start(ctx, "submit "+spec.Name, trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("atoll.task_id", task.String()), attribute.String("atoll.function", spec.Function),
				attribute.String("atoll.task_kind", kind)))
		spec.Trace = telemetry.Inject(ctx)
	}

	sub := owner.Submission{Spec: spec, Recycle: true}
	if att != nil {
		sub.Attach = att
		att.release = release
	} else if watchOnly != nil {
		sub.Attach = watchOnly // Finished forgets the task (applyOwnerEffect)
	}
	if as != nil {
		sub.Actor = as.ID
	}
	var err error
	if err = rt.declaredDead(); err != nil {
		sub.Err = errs.ToProto(err)
	} else if sub.Args, err = rt.buildArgs(args); err != nil {
		sub.Err = errs.ToProto(err)
	}
	var buf [2]ids.ObjectID // most tasks have one or two returns
	var recBuf [2]owner.Record
	var returns []ids.ObjectID
	var recs []owner.Record
	// The first return's ref state goes in one allocation with the
	// owner's records: the task's and its return's (submitBlock) or the
	// return's alone (returnRecords).
	var first *refState
	var taskSpace *owner.TaskSpace
	var objectSpace *owner.ObjectSpace
	switch {
	case spec.Generator || spec.NumReturns == 0:
	case owner.InSpace(sub):
		b := new(submitBlock)
		first, taskSpace = &b.ref, &b.records
	default:
		b := new(returnRecords)
		first, objectSpace = &b.ref, &b.record
	}
	rt.owner.do(func(t *owner.Table) {
		if spec.Generator {
			returns = t.SubmitGenerator(sub) // its items stream to the caller (stream.go)
		} else {
			returns, recs = t.SubmitRecordsIn(taskSpace, objectSpace, buf[:0], recBuf[:0], sub)
		}
	})
	handles := slices.Grow(dst, len(returns))
	for i, id := range returns {
		var rec owner.Record
		if i < len(recs) {
			rec = recs[i]
		}
		var st *refState // nil: newRefIn makes one
		if i == 0 {
			st = first
		}
		handles = append(handles, rt.newRefIn(st, id, rec))
	}
	if att != nil && ctx.Done() != nil && err == nil {
		// Cancelling ctx cancels the task (recursively), unless ctx is
		// the context of a task cancelled alone (Cancel with NonRecursive).
		att.setWatch(rt.watchContext(ctx))
	}
	if watchOnly != nil {
		// The watch was made before the owner knew the task: a context
		// done since may have fired it while the task was unknown.
		watchOnly.submitted(task)
	}
	return handles
}

// submitBlock is a task's records, the owner table's and its first
// return ref's state, in one allocation (256 bytes, a size class) where
// they were four (the task's, its packed spec's, its return's and the
// ref state): they live about as long as one another, the ref's
// state pointing at the return's record (refState.rec), and the task's
// record kept as the return's lineage while it is referenced
// (owner.InSpace says which tasks).
type submitBlock struct {
	ref     refState
	records owner.TaskSpace
}

// returnRecords is the first return's records, the owner table's and its
// ref's state, of a task whose own record goes when it ends (an actor
// call, a task without retries): one allocation of 112 bytes, a size
// class.
type returnRecords struct {
	ref    refState
	record owner.ObjectSpace
}

// buildArgs encodes value arguments: small ones inline, large ones put in
// the store as objects the task takes over. On error the arguments built
// so far are returned too, for the owner to release.
func (rt *Runtime) buildArgs(args []ArgSource) ([]owner.Arg, error) {
	out := make([]owner.Arg, 0, len(args))
	inlined := 0
	for i, a := range args {
		if a.Ref != nil {
			if a.Ref.state.released.Load() {
				return out, errs.Invalidf("argument %d: ObjectRef %s used after Release", i, a.Ref.ID().Short())
			}
			out = append(out, owner.Arg{Ref: a.Ref.ID()})
			continue
		}
		enc, err := codec.Encode(a.Val)
		if err != nil {
			return out, err
		}
		if rt.inline(len(enc.Data)) && inlined+len(enc.Data) <= MaxInlineTotal {
			inlined += len(enc.Data)
			data := enc.Data
			if _, raw := a.Val.(codec.Raw); raw || codec.ElemSize(enc.Codec) != 0 {
				data = append([]byte(nil), data...) // raw encodings alias the caller's slice
			}
			arg := owner.Arg{Value: &atollpb.Value{Codec: enc.Codec, Kind: &atollpb.Value_Inline{Inline: data}}}
			if enc.Codec == atollpb.Codec_CODEC_GOB {
				arg.Holds = containedRefs(data)
			}
			out = append(out, arg)
			continue
		}
		// Past the inline total even a small value goes to the store:
		// kept inline by the owner, it would be inlined into the spec.
		id, _, err := rt.putEncoded(context.Background(), enc, false)
		if err != nil {
			return out, err
		}
		// The put's one reference is the task's: released when it ends.
		out = append(out, owner.Arg{Ref: id, Owned: true})
	}
	return out, nil
}
