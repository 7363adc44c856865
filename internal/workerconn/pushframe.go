package workerconn

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/slab"
)

// A TaskSpec's fields as a push frame carries them: its shape's (what a
// kind of task shares with the others of its kind: its function, name,
// job, owner, demand, retries, binary, the actor and caller of a call)
// and the task's own (its id, arguments, attempt, trace, sequence
// number). The raylet's push encoder writes a task's shape fields first,
// marshalled once for every task of the shape, then its own; a reader
// decodes the shape once too (pushDecoder). A field added to TaskSpec
// must be in one of the two lists (the raylet's
// TestPushEncoderKnowsEveryField).
var (
	SpecOwnFields   = []protowire.Number{1, 6, 11, 14, 16, 18, 19, 20}
	SpecShapeFields = []protowire.Number{2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 15, 17, 21, 22, 23, 24, 25, 40, 41, 42}
)

// Field numbers of Frame.push_task and PushTask.spec, and the shape
// fields whose values are messages (never shared between specs: a push
// with one is decoded whole).
const (
	framePushTask      = 11
	pushTaskSpec       = 1
	specActorCreation  = 17
	specScheduling     = 21
	specFieldsInBitmap = 64
)

// The own fields a task without arguments, trace or borrowed refs has,
// which decodeScalars decodes.
const (
	specTaskID          = 1
	specAttempt         = 11
	specSequenceNumber  = 16
	specNumDependencies = 19
)

// fieldSet is a set of field numbers below specFieldsInBitmap.
type fieldSet uint64

func setOf(ns []protowire.Number) fieldSet {
	var s fieldSet
	for _, n := range ns {
		s |= 1 << n
	}
	return s
}

func (s fieldSet) has(n protowire.Number) bool { return n < specFieldsInBitmap && s&(1<<n) != 0 }

var (
	ownFields   = setOf(SpecOwnFields)
	shapeFields = setOf(SpecShapeFields)
)

// pushDecoder decodes push frames from one connection, keeping the shape
// of the last: a spec whose leading shape fields are byte for byte the
// last one's takes its shape fields from it (strings, ids and the
// resources map shared, read-only, between the specs of a shape) and
// decodes only its own. Anything else (other bodies, fields out of that
// order, unknown fields, a shape with a message in it) is left to
// proto.Unmarshal, so a frame decodes as proto.Unmarshal decodes it
// (TestPushDecoderMatchesProto, FuzzPushDecoder).
type pushDecoder struct {
	key   []byte            // the last shape's bytes
	shape *atollpb.TaskSpec // and its fields, decoded
	// blocks makes the decoded pushes a run at a time: a push lives from
	// its read to its task's end, close to the pushes read beside it.
	blocks slab.Of[pushBlock]
}

// pushBlock holds the messages of a decoded push frame and its task id's
// bytes (592 bytes, 6 to a run of pushDecoder.blocks).
type pushBlock struct {
	frame atollpb.Frame
	body  atollpb.Frame_PushTask
	push  atollpb.PushTask
	spec  atollpb.TaskSpec
	id    [ids.Len16]byte
}

// decode decodes b if it is a push frame of the shape-then-own layout;
// ok false leaves it to proto.Unmarshal.
func (d *pushDecoder) decode(b []byte) (f *atollpb.Frame, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != framePushTask || typ != protowire.BytesType {
		return nil, false
	}
	push, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return nil, false // another field after the push
	}
	num, typ, n = protowire.ConsumeTag(push)
	if n < 0 || num != pushTaskSpec || typ != protowire.BytesType {
		return nil, false
	}
	spec, m := protowire.ConsumeBytes(push[n:])
	if m < 0 || n+m != len(push) {
		return nil, false
	}
	shapeLen, ok := splitSpec(spec)
	if !ok || shapeLen == 0 {
		return nil, false
	}
	if d.shape == nil || !bytes.Equal(spec[:shapeLen], d.key) {
		shape := &atollpb.TaskSpec{}
		if proto.Unmarshal(spec[:shapeLen], shape) != nil || len(shape.ProtoReflect().GetUnknown()) > 0 {
			return nil, false // a field of the wrong wire type is an unknown one
		}
		d.key, d.shape = append(d.key[:0], spec[:shapeLen]...), shape
	}
	blk := d.blocks.New()
	if !blk.decodeScalars(spec[shapeLen:]) &&
		(proto.Unmarshal(spec[shapeLen:], &blk.spec) != nil || len(blk.spec.ProtoReflect().GetUnknown()) > 0) {
		return nil, false
	}
	copyShape(&blk.spec, d.shape)
	blk.push.Spec = &blk.spec
	blk.body.PushTask = &blk.push
	blk.frame.Body = &blk.body
	return &blk.frame, true
}

// decodeScalars decodes own, a spec's own fields, into b if they are
// only its id and numbers (no arguments, trace or borrowed refs: a task
// of no arguments), as proto.Unmarshal would: the last of a field
// repeated wins, a number is its varint cut to the field's width, an
// empty id is none. The id's bytes go in the block, where proto.Unmarshal
// would copy them into an allocation of their own. False: own holds
// anything else, and b is untouched.
func (b *pushBlock) decodeScalars(own []byte) bool {
	var id []byte
	var attempt, deps int32
	var seq uint64
	if !eachField(own, func(num protowire.Number, v uint64, s []byte, isBytes bool) bool {
		switch {
		case num == specTaskID && isBytes:
			id = s
		case num == specAttempt && !isBytes:
			attempt = int32(v)
		case num == specSequenceNumber && !isBytes:
			seq = v
		case num == specNumDependencies && !isBytes:
			deps = int32(v)
		default:
			return false
		}
		return true
	}) {
		return false
	}
	switch {
	case len(id) == 0:
	case len(id) <= len(b.id):
		b.spec.TaskId = b.id[:copy(b.id[:], id):len(id)]
	default:
		b.spec.TaskId = append([]byte(nil), id...)
	}
	b.spec.Attempt, b.spec.SequenceNumber, b.spec.NumDependencies = attempt, seq, deps
	return true
}

// splitSpec returns the length of spec's leading shape fields, checking
// that the rest are own fields and that the shape holds no message.
func splitSpec(spec []byte) (shapeLen int, ok bool) {
	own := false
	for i := 0; i < len(spec); {
		num, typ, n := protowire.ConsumeTag(spec[i:])
		if n < 0 {
			return 0, false
		}
		m := protowire.ConsumeFieldValue(num, typ, spec[i+n:])
		if m < 0 {
			return 0, false
		}
		switch {
		case shapeFields.has(num) && !own:
			if num == specActorCreation || num == specScheduling {
				return 0, false
			}
			shapeLen = i + n + m
		case ownFields.has(num):
			own = true
		default:
			return 0, false // a shape field after the task's own, or unknown
		}
		i += n + m
	}
	return shapeLen, true
}

// copyShape sets dst's shape fields (SpecShapeFields but the two
// messages, which a decoded shape never has) from shape.
func copyShape(dst, shape *atollpb.TaskSpec) {
	dst.JobId, dst.Type, dst.Function, dst.Name, dst.NumReturns = shape.JobId, shape.Type, shape.Function, shape.Name, shape.NumReturns
	dst.Resources, dst.MaxRetries, dst.RetryExceptions = shape.Resources, shape.MaxRetries, shape.RetryExceptions
	dst.OwnerId, dst.OwnerAddress, dst.ActorId = shape.OwnerId, shape.OwnerAddress, shape.ActorId
	dst.WorkerBinary, dst.WorkerBinarySha256 = shape.WorkerBinary, shape.WorkerBinarySha256
	dst.ConcurrencyGroup, dst.CallerId = shape.ConcurrencyGroup, shape.CallerId
	dst.Generator, dst.GeneratorBackpressure, dst.RetryErrors = shape.Generator, shape.GeneratorBackpressure, shape.RetryErrors
}
