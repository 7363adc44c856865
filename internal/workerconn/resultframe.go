package workerconn

import (
	"bytes"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/slab"
)

// The frame every task sends back, its result, is decoded here without
// reflection and in little more than one allocation (the frame's
// messages and, up to len(resultBlock.bytes), its bytes in one block, a
// share of a run of them; the return's value in an allocation of its
// own, which is what its owner keeps), where proto.Unmarshal takes about
// a dozen. Only the
// common shape is decoded: a task's id, attempt, worker id, borrow report
// flags and at most one return holding a codec and an inline value. A
// frame with anything else (an error, a stored value, contained refs, a
// trace context, unknown fields, a field twice where the two would
// merge) is left to proto.Unmarshal, so the result is always the one
// proto.Unmarshal gives (TestDecodeResultMatchesProto and
// FuzzDecodeResult check it).

// resultBlock holds the messages of a decoded result frame but its
// value, which its owner keeps for as long as the object lives: that is
// a valueBlock of its own, so that the frame's other messages go once
// the result is applied. Blocks come a run at a time (resultDecoder):
// a result lives from its frame's read to its owner's applying it, as
// its run-mates do.
type resultBlock struct {
	frame  atollpb.Frame
	body   atollpb.Frame_TaskResult
	result atollpb.TaskResult
	ret    atollpb.ReturnObject
	rets   [1]*atollpb.ReturnObject
	// bytes holds a copy of the result's bytes, which the ids decoded
	// point into, when they fit (a no-op task's are about 80 bytes); a
	// longer result's are an allocation of their own.
	bytes [128]byte
}

// valueBlock is a decoded return's value, which its owner may keep for
// long (a million of them, for a million results gathered): an inline
// value of up to len(small) bytes is copied into it (the block is then
// 128 bytes, a size class), a longer one into an allocation of its own,
// so that no value keeps the frame's bytes.
type valueBlock struct {
	value  atollpb.Value
	inline atollpb.Value_Inline
	small  [16]byte
}

// Field numbers decoded here (atollpb's worker.proto, task.proto and
// common.proto).
const (
	frameID         = 1
	frameReplyTo    = 2
	frameTaskResult = 12

	resultTaskID          = 1
	resultAttempt         = 2
	resultReturns         = 3
	resultWorkerID        = 5
	resultBorrowsReported = 11
	resultBorrowsSeq      = 12

	returnObjectID = 1
	returnValue    = 2

	valueCodec  = 1
	valueInline = 2
)

// resultDecoder decodes a connection's result frames, on its reader's
// goroutine.
type resultDecoder struct {
	blocks slab.Of[resultBlock]
}

// decode decodes b if it is a Frame of the common task-result shape; ok
// false leaves it to proto.Unmarshal (another body, another shape, or
// bytes proto.Unmarshal may reject).
func (d *resultDecoder) decode(b []byte) (f *atollpb.Frame, ok bool) {
	var id, replyTo uint64
	var body []byte
	seen := false
	if !eachField(b, func(num protowire.Number, v uint64, s []byte, isBytes bool) bool {
		switch {
		case num == frameID && !isBytes:
			id = v
		case num == frameReplyTo && !isBytes:
			replyTo = v
		case num == frameTaskResult && isBytes && !seen:
			body, seen = s, true
		default:
			return false
		}
		return true
	}) || !seen {
		return nil, false
	}
	// The bytes fields point into one copy of the result's bytes.
	blk := d.blocks.New()
	if len(body) <= len(blk.bytes) {
		body = blk.bytes[:copy(blk.bytes[:], body):len(body)]
	} else {
		body = append([]byte(nil), body...)
	}
	if !blk.decodeResult(body) {
		return nil, false
	}
	blk.frame.Id, blk.frame.ReplyTo = id, replyTo
	blk.body.TaskResult = &blk.result
	blk.frame.Body = &blk.body
	return &blk.frame, true
}

func (blk *resultBlock) decodeResult(b []byte) bool {
	r := &blk.result
	return eachField(b, func(num protowire.Number, v uint64, s []byte, isBytes bool) bool {
		switch {
		case num == resultTaskID && isBytes:
			r.TaskId = nonEmpty(s)
		case num == resultAttempt && !isBytes:
			r.Attempt = int32(v)
		case num == resultReturns && isBytes && r.Returns == nil:
			if !blk.decodeReturn(s) {
				return false
			}
			blk.rets[0] = &blk.ret
			r.Returns = blk.rets[:]
		case num == resultWorkerID && isBytes:
			r.WorkerId = nonEmpty(s)
		case num == resultBorrowsReported && !isBytes:
			r.BorrowsReported = v != 0
		case num == resultBorrowsSeq && !isBytes:
			r.BorrowsSeq = v
		default:
			return false
		}
		return true
	})
}

func (blk *resultBlock) decodeReturn(b []byte) bool {
	ret := &blk.ret
	return eachField(b, func(num protowire.Number, _ uint64, s []byte, isBytes bool) bool {
		switch {
		case num == returnObjectID && isBytes:
			ret.ObjectId = nonEmpty(s)
		case num == returnValue && isBytes && ret.Value == nil:
			vb := &valueBlock{}
			if !vb.decode(s) {
				return false
			}
			ret.Value = &vb.value
		default:
			return false
		}
		return true
	})
}

func (vb *valueBlock) decode(b []byte) bool {
	val := &vb.value
	return eachField(b, func(num protowire.Number, v uint64, s []byte, isBytes bool) bool {
		switch {
		case num == valueCodec && !isBytes:
			val.Codec = atollpb.Codec(int32(v))
		case num == valueInline && isBytes && val.Kind == nil:
			if len(s) <= len(vb.small) {
				s = vb.small[:copy(vb.small[:], s)]
			} else {
				s = bytes.Clone(s)
			}
			vb.inline.Inline = s[:len(s):len(s)] // a oneof's bytes are set even when empty
			val.Kind = &vb.inline
		default:
			return false
		}
		return true
	})
}

// eachField walks the fields of a message's bytes, calling f with each
// field's number and value: v for a varint, s for a length-delimited
// field (isBytes). It reports false on bytes that are not fields, on a
// field of another wire type, and on a field f does not take.
func eachField(b []byte, f func(num protowire.Number, v uint64, s []byte, isBytes bool) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v uint64
		var s []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			s, n = protowire.ConsumeBytes(b)
		default:
			return false
		}
		if n < 0 || !f(num, v, s, typ == protowire.BytesType) {
			return false
		}
		b = b[n:]
	}
	return true
}

// nonEmpty is a proto3 bytes field as proto.Unmarshal sets it: nil when
// empty.
func nonEmpty(s []byte) []byte {
	if len(s) == 0 {
		return nil
	}
	return s[:len(s):len(s)]
}

// resultFrameSize is the encoded size of f if it is a task-result frame
// of the common shape (the one decodeResult takes), else -1; f is then
// encoded by appendResultFrame, as proto.Marshal would encode it, without
// reflection.
func resultFrameSize(f *atollpb.Frame) int {
	r := f.GetTaskResult()
	if r == nil || !commonResult(r) {
		return -1
	}
	n := resultSize(r)
	return varintField(1, f.Id) + varintField(1, f.ReplyTo) + 1 + protowire.SizeBytes(n)
}

// commonResult reports whether r has the fields decodeResult decodes
// only.
func commonResult(r *atollpb.TaskResult) bool {
	if r.Error != nil || r.ExecuteSpan != nil || r.ActorAddress != "" || r.ActorCrashed || r.GeneratorItem != nil ||
		len(r.Transferred) > 0 || len(r.Borrows) > 0 || len(r.Returns) > 1 || len(r.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	if len(r.Returns) == 0 {
		return true
	}
	ret := r.Returns[0]
	if ret == nil || len(ret.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	v := ret.Value
	if v == nil {
		return true
	}
	if len(v.ContainedRefs) > 0 || len(v.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	switch v.Kind.(type) {
	case nil, *atollpb.Value_Inline:
		return true
	}
	return false
}

func resultSize(r *atollpb.TaskResult) int {
	n := bytesField(len(r.TaskId)) + varintField(1, uint64(int64(r.Attempt))) + bytesField(len(r.WorkerId))
	if r.BorrowsReported {
		n += 2
	}
	n += varintField(1, r.BorrowsSeq)
	if len(r.Returns) == 1 {
		n += 1 + protowire.SizeBytes(returnSize(r.Returns[0]))
	}
	return n
}

func returnSize(ret *atollpb.ReturnObject) int {
	n := bytesField(len(ret.ObjectId))
	if ret.Value != nil {
		n += 1 + protowire.SizeBytes(valueSize(ret.Value))
	}
	return n
}

func valueSize(v *atollpb.Value) int {
	n := varintField(1, uint64(int64(v.Codec)))
	if in, ok := v.Kind.(*atollpb.Value_Inline); ok {
		n += 1 + protowire.SizeBytes(len(in.Inline))
	}
	return n
}

// appendResultFrame appends f, which resultFrameSize took, in the field
// order proto.Marshal writes.
func appendResultFrame(b []byte, f *atollpb.Frame) []byte {
	r := f.GetTaskResult()
	b = appendVarintField(b, frameID, f.Id)
	b = appendVarintField(b, frameReplyTo, f.ReplyTo)
	b = protowire.AppendTag(b, frameTaskResult, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(resultSize(r)))
	b = appendBytesField(b, resultTaskID, r.TaskId)
	b = appendVarintField(b, resultAttempt, uint64(int64(r.Attempt)))
	if len(r.Returns) == 1 {
		ret := r.Returns[0]
		b = protowire.AppendTag(b, resultReturns, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(returnSize(ret)))
		b = appendBytesField(b, returnObjectID, ret.ObjectId)
		if v := ret.Value; v != nil {
			b = protowire.AppendTag(b, returnValue, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(valueSize(v)))
			b = appendVarintField(b, valueCodec, uint64(int64(v.Codec)))
			if in, ok := v.Kind.(*atollpb.Value_Inline); ok {
				b = protowire.AppendTag(b, valueInline, protowire.BytesType)
				b = protowire.AppendBytes(b, in.Inline)
			}
		}
	}
	b = appendBytesField(b, resultWorkerID, r.WorkerId)
	if r.BorrowsReported {
		b = protowire.AppendTag(b, resultBorrowsReported, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return appendVarintField(b, resultBorrowsSeq, r.BorrowsSeq)
}

// The sizes of proto3 fields with one-byte tags (nothing for a zero
// value), and their encodings.
func bytesField(n int) int {
	if n == 0 {
		return 0
	}
	return 1 + protowire.SizeBytes(n)
}

func varintField(tag int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tag + protowire.SizeVarint(v)
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}
