package raylet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// PushEncoder encodes push_task frames for Specs straight into a
// connection's buffer (a workerconn.Encoder): no Frame or PushTask value,
// and each spec's fields that a kind of task shares with the others of
// its kind (its function, name, job, owner, demand, retries, binary, the
// actor and caller of a call: a shape) are marshalled once and kept, the
// task's own (its id, arguments, attempt, trace, sequence number) appended
// to them for each task. Protobuf readers take fields in any order, so the
// frame is an ordinary push_task frame. It remembers the last few shapes;
// a spec with unknown fields or an actor's creation is marshalled whole.
// Not safe for concurrent use.
type PushEncoder struct {
	Specs   []*atollpb.TaskSpec
	shapes  []*specShape
	scratch []byte
}

// maxShapes bounds the shapes a PushEncoder keeps (most recent first).
const maxShapes = 8

// Field numbers of Frame.push_task and PushTask.spec.
const (
	framePushTask = 11
	pushTaskSpec  = 1
)

// Fields of a TaskSpec, by number, as PushEncoder splits them: a task's
// own (perTaskFields) and its shape's (shapeFields), the lists the
// worker's reader splits them by. A field added to TaskSpec must be added
// to one of the two (TestPushEncoderKnowsEveryField).
var (
	perTaskFields = workerconn.SpecOwnFields
	shapeFields   = workerconn.SpecShapeFields
)

// specShape is the fields a kind of task shares, and their bytes.
type specShape struct {
	t      atollpb.TaskSpec // the shared fields only
	prefix []byte
}

// AppendFrames implements workerconn.Encoder.
func (e *PushEncoder) AppendFrames(buf []byte) ([]byte, error) {
	for _, spec := range e.Specs {
		var err error
		if buf, err = e.appendFrame(buf, spec); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func (e *PushEncoder) appendFrame(buf []byte, spec *atollpb.TaskSpec) ([]byte, error) {
	var prefix, own []byte
	if sh := e.shape(spec); sh != nil {
		prefix = sh.prefix
		e.scratch = appendOwnFields(e.scratch[:0], spec)
		own = e.scratch
	} else {
		b, err := proto.MarshalOptions{}.MarshalAppend(e.scratch[:0], spec)
		if err != nil {
			return buf, err
		}
		e.scratch, own = b, b
	}
	n := len(prefix) + len(own)
	inner := protowire.SizeTag(pushTaskSpec) + protowire.SizeBytes(n)
	size := protowire.SizeTag(framePushTask) + protowire.SizeBytes(inner)
	if size > workerconn.MaxFrame {
		return buf, fmt.Errorf("%w: a push of %d bytes exceeds %d", workerconn.ErrBadFrame, size, workerconn.MaxFrame)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(size))
	buf = protowire.AppendTag(buf, framePushTask, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(inner))
	buf = protowire.AppendTag(buf, pushTaskSpec, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(n))
	buf = append(buf, prefix...)
	return append(buf, own...), nil
}

// shape returns spec's shape, made and kept if new; nil if spec cannot be
// split (unknown fields, an actor's creation).
func (e *PushEncoder) shape(spec *atollpb.TaskSpec) *specShape {
	if spec.ActorCreation != nil || len(spec.ProtoReflect().GetUnknown()) > 0 {
		return nil
	}
	for i, sh := range e.shapes {
		if sh.matches(spec) {
			if i > 0 { // most recent first
				copy(e.shapes[1:i+1], e.shapes[:i])
				e.shapes[0] = sh
			}
			return sh
		}
	}
	sh := newShape(spec)
	if sh == nil {
		return nil
	}
	if len(e.shapes) < maxShapes {
		e.shapes = append(e.shapes, nil)
	}
	copy(e.shapes[1:], e.shapes)
	e.shapes[0] = sh
	return sh
}

func newShape(spec *atollpb.TaskSpec) *specShape {
	sh := &specShape{}
	t := &sh.t
	t.JobId, t.Type, t.Function, t.Name, t.NumReturns = bytes.Clone(spec.JobId), spec.Type, spec.Function, spec.Name, spec.NumReturns
	t.Resources, t.MaxRetries, t.RetryExceptions = maps.Clone(spec.Resources), spec.MaxRetries, spec.RetryExceptions
	t.OwnerId, t.OwnerAddress, t.ActorId = bytes.Clone(spec.OwnerId), spec.OwnerAddress, bytes.Clone(spec.ActorId)
	if spec.Scheduling != nil {
		t.Scheduling = proto.Clone(spec.Scheduling).(*atollpb.SchedulingStrategy)
	}
	t.WorkerBinary, t.WorkerBinarySha256 = spec.WorkerBinary, bytes.Clone(spec.WorkerBinarySha256)
	t.ConcurrencyGroup, t.CallerId = spec.ConcurrencyGroup, bytes.Clone(spec.CallerId)
	t.Generator, t.GeneratorBackpressure = spec.Generator, spec.GeneratorBackpressure
	b, err := proto.Marshal(t)
	if err != nil {
		return nil
	}
	sh.prefix = b
	return sh
}

// matches reports whether spec's shared fields are sh's.
func (sh *specShape) matches(spec *atollpb.TaskSpec) bool {
	t := &sh.t
	if t.Function != spec.Function || t.Name != spec.Name || t.Type != spec.Type || t.NumReturns != spec.NumReturns ||
		t.MaxRetries != spec.MaxRetries || t.RetryExceptions != spec.RetryExceptions || t.OwnerAddress != spec.OwnerAddress ||
		t.WorkerBinary != spec.WorkerBinary || t.ConcurrencyGroup != spec.ConcurrencyGroup ||
		t.Generator != spec.Generator || t.GeneratorBackpressure != spec.GeneratorBackpressure ||
		!bytes.Equal(t.JobId, spec.JobId) || !bytes.Equal(t.OwnerId, spec.OwnerId) || !bytes.Equal(t.ActorId, spec.ActorId) ||
		!bytes.Equal(t.CallerId, spec.CallerId) || !bytes.Equal(t.WorkerBinarySha256, spec.WorkerBinarySha256) ||
		len(t.Resources) != len(spec.Resources) {
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

// appendOwnFields appends spec's own fields (perTaskFields), as
// proto.Marshal would write them.
func appendOwnFields(b []byte, spec *atollpb.TaskSpec) []byte {
	if len(spec.TaskId) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, spec.TaskId)
	}
	for _, a := range spec.Args {
		b = appendMessage(b, 6, a)
	}
	if spec.Attempt != 0 {
		b = protowire.AppendTag(b, 11, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(spec.Attempt)))
	}
	if spec.Trace != nil {
		b = appendMessage(b, 14, spec.Trace)
	}
	if spec.SequenceNumber != 0 {
		b = protowire.AppendTag(b, 16, protowire.VarintType)
		b = protowire.AppendVarint(b, spec.SequenceNumber)
	}
	for _, p := range spec.ArgProducers {
		b = appendMessage(b, 18, p)
	}
	if spec.NumDependencies != 0 {
		b = protowire.AppendTag(b, 19, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(spec.NumDependencies)))
	}
	for _, r := range spec.Borrowed {
		b = appendMessage(b, 20, r)
	}
	return b
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
		panic(fmt.Sprintf("raylet: marshal %T: %v", m, err))
	}
	return out
}
