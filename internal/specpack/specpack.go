// Package specpack keeps task specs small while they wait to run.
//
// A task spec (atollpb.TaskSpec) is split in two: its shape, the fields
// a kind of task shares with the others of its kind (its function, name,
// job, owner, demand, retries, binary, the actor and caller of a call),
// and the task's own fields (its id, arguments, attempt, trace, sequence
// number). A Shape is kept once, with its fields' encoding, and shared by
// every task of the kind; a Spec is a task's own fields, encoded, next to
// its shape. A million tasks of one function queued at once then cost
// about a hundred bytes each instead of the ~600 of a TaskSpec and its
// argument messages, and pushing one to a worker is a copy of its
// shape's bytes and its own (protobuf readers take fields in any order,
// so that is an ordinary TaskSpec encoding).
//
// Shapes interns the shapes of recent specs; Pack packs a spec whose
// fields split that way (not an actor's creation, nothing unknown), and
// Unpack gives a TaskSpec back. Which fields are a shape's and which a
// task's is workerconn.SpecShapeFields and workerconn.SpecOwnFields, the
// lists a worker's reader splits a push by.
package specpack

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Shape is the fields a kind of task shares, and their encoding. It is
// read-only once made.
type Shape struct {
	spec   atollpb.TaskSpec // the shared fields only
	prefix []byte
}

// Spec returns the shape's fields as a TaskSpec with only those set. The
// caller must not modify it.
func (sh *Shape) Spec() *atollpb.TaskSpec { return &sh.spec }

// Bytes is the shape fields' encoding. The caller must not modify it.
func (sh *Shape) Bytes() []byte { return sh.prefix }

// NewShape returns spec's shape; nil if spec cannot be split (an actor's
// creation, or fields this build does not know).
func NewShape(spec *atollpb.TaskSpec) *Shape {
	if !splittable(spec) {
		return nil
	}
	sh := &Shape{}
	t := &sh.spec
	t.JobId, t.Type, t.Function, t.Name, t.NumReturns = bytes.Clone(spec.JobId), spec.Type, spec.Function, spec.Name, spec.NumReturns
	t.Resources, t.MaxRetries, t.RetryExceptions = maps.Clone(spec.Resources), spec.MaxRetries, spec.RetryExceptions
	t.OwnerId, t.OwnerAddress, t.ActorId = bytes.Clone(spec.OwnerId), spec.OwnerAddress, bytes.Clone(spec.ActorId)
	if spec.Scheduling != nil {
		t.Scheduling = proto.CloneOf(spec.Scheduling)
	}
	t.WorkerBinary, t.WorkerBinarySha256 = spec.WorkerBinary, bytes.Clone(spec.WorkerBinarySha256)
	t.ConcurrencyGroup, t.CallerId = spec.ConcurrencyGroup, bytes.Clone(spec.CallerId)
	t.Generator, t.GeneratorBackpressure, t.RetryErrors = spec.Generator, spec.GeneratorBackpressure, slices.Clone(spec.RetryErrors)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	if err != nil {
		return nil
	}
	sh.prefix = b
	return sh
}

func splittable(spec *atollpb.TaskSpec) bool {
	return spec.ActorCreation == nil && len(spec.ProtoReflect().GetUnknown()) == 0 &&
		(spec.Scheduling == nil || len(spec.Scheduling.ProtoReflect().GetUnknown()) == 0)
}

// Matches reports whether spec's shared fields are sh's.
func (sh *Shape) Matches(spec *atollpb.TaskSpec) bool {
	t := &sh.spec
	if t.Function != spec.Function || t.Name != spec.Name || t.Type != spec.Type || t.NumReturns != spec.NumReturns ||
		t.MaxRetries != spec.MaxRetries || t.RetryExceptions != spec.RetryExceptions || t.OwnerAddress != spec.OwnerAddress ||
		t.WorkerBinary != spec.WorkerBinary || t.ConcurrencyGroup != spec.ConcurrencyGroup ||
		t.Generator != spec.Generator || t.GeneratorBackpressure != spec.GeneratorBackpressure ||
		!bytes.Equal(t.JobId, spec.JobId) || !bytes.Equal(t.OwnerId, spec.OwnerId) || !bytes.Equal(t.ActorId, spec.ActorId) ||
		!bytes.Equal(t.CallerId, spec.CallerId) || !bytes.Equal(t.WorkerBinarySha256, spec.WorkerBinarySha256) ||
		len(t.Resources) != len(spec.Resources) || !slices.Equal(t.RetryErrors, spec.RetryErrors) {
		return false
	}
	for k, v := range spec.Resources {
		if w, ok := t.Resources[k]; !ok || w != v {
			return false
		}
	}
	a, b := t.Scheduling, spec.Scheduling
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || a.Kind == b.Kind && a.Soft == b.Soft && bytes.Equal(a.NodeId, b.NodeId) &&
		len(b.ProtoReflect().GetUnknown()) == 0
}

// Leasable reports whether spec may be submitted under a lease, and so
// is packed while it waits: a normal task with no object argument (a
// root task: admission by argument bytes has nothing to hold), no ref
// inside its arguments, not a generator (its items and acks go through
// the raylet) and with the default placement.
func Leasable(spec *atollpb.TaskSpec) bool {
	return spec.Type == atollpb.TaskType_NORMAL_TASK && spec.NumDependencies == 0 && len(spec.Borrowed) == 0 && !spec.Generator &&
		spec.GetScheduling().GetKind() == atollpb.SchedulingStrategy_DEFAULT && !hasRefArg(spec)
}

func hasRefArg(spec *atollpb.TaskSpec) bool {
	for _, a := range spec.Args {
		if a.GetRef() != nil {
			return true
		}
	}
	return false
}

// maxShapes bounds the shapes a Shapes keeps (most recent first).
const maxShapes = 8

// Shapes keeps the shapes of the last few kinds of task seen, most recent
// first, so that the specs of one kind share one. Not safe for concurrent
// use.
type Shapes struct {
	list    []*Shape
	scratch []byte
}

// Of returns spec's shape, made and kept if new; nil if spec cannot be
// split.
func (s *Shapes) Of(spec *atollpb.TaskSpec) *Shape {
	if !splittable(spec) {
		return nil
	}
	for i, sh := range s.list {
		if sh.Matches(spec) {
			if i > 0 { // most recent first
				copy(s.list[1:i+1], s.list[:i])
				s.list[0] = sh
			}
			return sh
		}
	}
	sh := NewShape(spec)
	if sh == nil {
		return nil
	}
	if len(s.list) < maxShapes {
		s.list = append(s.list, nil)
	}
	copy(s.list[1:], s.list)
	s.list[0] = sh
	return sh
}

// specs are TaskSpecs whose tasks were packed (Recycle), kept for the
// next submissions to fill (NewSpec).
var specs = sync.Pool{New: func() any { return new(SpecWithID).Spec() }}

// SpecWithID is a spec with room for its task id, in one allocation. A
// spec that will not be recycled (an actor call's) is made as one rather
// than taken from NewSpec's pool, which would be empty each time and
// cost a look through every P's share; an actor handle makes its calls'
// a run at a time (package slab).
type SpecWithID struct {
	spec atollpb.TaskSpec
	id   [ids.Len16]byte
}

// Spec returns s's spec, empty, with s's room for a task id as its
// TaskId's array: s must be zero (new).
func (s *SpecWithID) Spec() *atollpb.TaskSpec {
	s.spec.TaskId = s.id[:0]
	return &s.spec
}

// maxRecycledArgs bounds the argument list a recycled spec keeps room for.
const maxRecycledArgs = 8

// NewSpec returns an empty TaskSpec: one a packed task left (Recycle), if
// there is one, with room for a task id and a few arguments.
func NewSpec() *atollpb.TaskSpec { return specs.Get().(*atollpb.TaskSpec) }

// Recycle empties spec and keeps it for NewSpec. The caller must hold the
// only reference to spec and to its Args and TaskId slices (as a
// submitter's owner does once it has packed the spec: Pack keeps none).
// The argument messages themselves are not reused.
func Recycle(spec *atollpb.TaskSpec) {
	args, id := spec.Args, spec.TaskId
	clear(args)
	spec.Reset()
	if cap(args) <= maxRecycledArgs {
		spec.Args = args[:0]
	}
	if cap(id) == ids.Len16 {
		spec.TaskId = id[:0]
	}
	specs.Put(spec)
}

// Pack returns spec packed: its shape (shared with the specs of its kind
// packed before) and its own fields encoded. It returns nil if spec
// cannot be split. spec is not kept: the caller may reuse or drop it.
func (s *Shapes) Pack(spec *atollpb.TaskSpec) *Spec { return s.PackInto(nil, spec) }

// PackInto is Pack into p, storage of the caller's that no reader holds
// (a record the spec is kept beside, to save an allocation a task); nil
// p allocates one. It returns nil, p untouched, if spec cannot be split.
func (s *Shapes) PackInto(p *Spec, spec *atollpb.TaskSpec) *Spec {
	sh := s.Of(spec)
	if sh == nil {
		return nil
	}
	s.scratch = AppendOwn(s.scratch[:0], spec)
	if p == nil {
		p = new(Spec)
	}
	*p = Spec{shape: sh, attempt: spec.Attempt}
	if n := len(s.scratch); n <= len(p.small) {
		p.n = uint8(n) // one allocation for a task with a small argument or two
		copy(p.small[:], s.scratch)
	} else {
		long := bytes.Clone(s.scratch)
		p.long = &long
	}
	if cap(s.scratch) > 64<<10 {
		s.scratch = nil // a spec with large inline arguments: keep no buffer its size
	}
	return p
}

// Spec is a packed task spec: its shape and its own fields' encoding. It
// is read-only.
type Spec struct {
	shape *Shape
	// long is the own fields' encoding when it does not fit in small,
	// else nil and small[:n] is.
	long    *[]byte
	attempt int32
	n       uint8
	small   [ownInline]byte
}

// own is the own fields' encoding (do not modify).
func (p *Spec) own() []byte {
	if p.long != nil {
		return *p.long
	}
	return p.small[:p.n:p.n]
}

// Held is a task's spec as its holders keep it (the owner's task, the
// submitter's queued task, a pushed attempt): whole, or packed (Whole
// nil). Its methods read either.
type Held struct {
	Whole  *atollpb.TaskSpec
	Packed *Spec
}

// Common is the whole spec or, packed, its shape: the fields a kind of
// task shares (name, type, job, function, demand, binary, retries, actor).
// Read-only.
func (h Held) Common() *atollpb.TaskSpec {
	if h.Packed != nil {
		return h.Packed.Shape()
	}
	return h.Whole
}

// Attempt is the attempt's number.
func (h Held) Attempt() int32 {
	if h.Packed != nil {
		return h.Packed.Attempt()
	}
	return h.Whole.Attempt
}

// ID is the task's id (zero if the spec's is malformed: holders keep
// only specs whose ids they checked).
func (h Held) ID() ids.TaskID {
	if h.Packed != nil {
		return ids.MustFromBytes(h.Packed.TaskID())
	}
	return ids.MustFromBytes(h.Whole.GetTaskId())
}

// Trace is the spec's trace context, nil if untraced.
func (h Held) Trace() *atollpb.TraceContext {
	if h.Packed != nil {
		return h.Packed.Trace()
	}
	return h.Whole.GetTrace()
}

// Spec returns the spec: the whole one, or the packed one unpacked (a
// copy of the caller's own).
func (h Held) Spec() *atollpb.TaskSpec {
	if h.Packed != nil {
		return h.Packed.Unpack()
	}
	return h.Whole
}

// taskIDTag is field 1's tag, a byte string: how an own encoding starts.
const taskIDTag = 1<<3 | byte(protowire.BytesType)

// ownInline is the own fields' bytes a Spec holds in itself: a task id
// and an argument of up to ~17 bytes, in the 64-byte size class.
const ownInline = 43

// Shape is the shared fields (do not modify).
func (p *Spec) Shape() *atollpb.TaskSpec { return &p.shape.spec }

// TaskID is the spec's task id (do not modify): its first own field, as
// AppendOwn writes it; nil if it has none.
func (p *Spec) TaskID() []byte {
	if o := p.own(); len(o) >= 2+ids.Len16 && o[0] == taskIDTag && o[1] == ids.Len16 {
		return o[2 : 2+ids.Len16 : 2+ids.Len16] // the usual: a 16-byte id (read on every step of a task)
	}
	own := p.own()
	num, typ, n := protowire.ConsumeTag(own)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return nil
	}
	id, m := protowire.ConsumeBytes(own[n:])
	if m < 0 {
		return nil
	}
	return id
}

// Attempt is the spec's attempt number.
func (p *Spec) Attempt() int32 { return p.attempt }

// Trace returns the spec's trace context, decoded from its own fields
// (a new one each call), or nil for an untraced task.
func (p *Spec) Trace() *atollpb.TraceContext {
	for b := p.own(); len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		if num == 14 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b[n:])
			tc := &atollpb.TraceContext{}
			if m < 0 || proto.Unmarshal(v, tc) != nil {
				return nil
			}
			return tc
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil
		}
		b = b[n+m:]
	}
	return nil
}

// Size is the spec's encoded size: proto.Size of the unpacked spec.
func (p *Spec) Size() int { return len(p.shape.prefix) + len(p.own()) }

// Parts returns the spec's encoding in its two parts: its shape's bytes
// and its own (do not modify either).
func (p *Spec) Parts() (shape, own []byte) { return p.shape.prefix, p.own() }

// AppendTo appends the spec's encoding: its shape's bytes, then its own.
func (p *Spec) AppendTo(b []byte) []byte {
	b = append(b, p.shape.prefix...)
	return append(b, p.own()...)
}

// Unpack returns the spec as a TaskSpec of the caller's own.
func (p *Spec) Unpack() *atollpb.TaskSpec {
	spec := &atollpb.TaskSpec{}
	if err := proto.Unmarshal(p.AppendTo(make([]byte, 0, p.Size())), spec); err != nil {
		// Pack wrote both halves with proto's own encoding.
		panic(fmt.Sprintf("specpack: unpack: %v", err))
	}
	return spec
}

// AppendOwn appends spec's own fields (workerconn.SpecOwnFields), as
// proto.Marshal would write them.
func AppendOwn(b []byte, spec *atollpb.TaskSpec) []byte {
	if len(spec.TaskId) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, spec.TaskId)
	}
	for _, a := range spec.Args {
		b = appendMessage(b, 6, a)
	}
	b = appendVarint(b, 11, uint64(int64(spec.Attempt)))
	if spec.Trace != nil {
		b = appendMessage(b, 14, spec.Trace)
	}
	b = appendVarint(b, 16, spec.SequenceNumber)
	for _, p := range spec.ArgProducers {
		b = appendMessage(b, 18, p)
	}
	b = appendVarint(b, 19, uint64(int64(spec.NumDependencies)))
	for _, r := range spec.Borrowed {
		b = appendMessage(b, 20, r)
	}
	return b
}

// appendVarint appends v as varint field num, unless it is zero (proto3
// writes no zero scalar).
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendMessage appends m as field num of its parent. A nil element of a
// repeated field is written empty, as proto.Marshal does.
func appendMessage(b []byte, num protowire.Number, m proto.Message) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	if !m.ProtoReflect().IsValid() {
		return protowire.AppendVarint(b, 0)
	}
	n := proto.Size(m)
	b = protowire.AppendVarint(b, uint64(n))
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
	if err != nil { // a message that sized cannot fail to marshal
		panic(fmt.Sprintf("specpack: marshal %T: %v", m, err))
	}
	return out
}
