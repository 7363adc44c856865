package raylet

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/specpack"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// PushEncoder encodes push_task frames for specs straight into a
// connection's buffer (a workerconn.Encoder): no Frame or PushTask value.
// Each spec's shape (specpack: the fields a kind of task shares with the
// others of its kind) is marshalled once and kept, the task's own fields
// appended to it for each task; a packed spec is its shape's bytes and
// its own as they are. Protobuf readers take fields in any order, so the
// frame is an ordinary push_task frame. A spec with unknown fields or an
// actor's creation is marshalled whole. Add specs, write the encoder,
// then Reset it. Not safe for concurrent use.
type PushEncoder struct {
	items   []pushItem
	shapes  specpack.Shapes
	scratch []byte
}

// pushItem is one spec to push: whole, or packed.
type pushItem struct {
	spec   *atollpb.TaskSpec
	packed *specpack.Spec
}

// Add queues spec's push.
func (e *PushEncoder) Add(spec *atollpb.TaskSpec) { e.items = append(e.items, pushItem{spec: spec}) }

// AddPacked queues a packed spec's push.
func (e *PushEncoder) AddPacked(p *specpack.Spec) { e.items = append(e.items, pushItem{packed: p}) }

// Len is the number of pushes queued.
func (e *PushEncoder) Len() int { return len(e.items) }

// Reset forgets the queued pushes (keeping the shapes).
func (e *PushEncoder) Reset() {
	clear(e.items)
	e.items = e.items[:0]
}

// Field numbers of Frame.push_task and PushTask.spec.
const (
	framePushTask = 11
	pushTaskSpec  = 1
)

// AppendFrames implements workerconn.Encoder.
func (e *PushEncoder) AppendFrames(buf []byte) ([]byte, error) {
	for _, it := range e.items {
		var err error
		if it.packed != nil {
			shape, own := it.packed.Parts()
			buf, err = appendPush(buf, shape, own)
		} else {
			buf, err = e.appendFrame(buf, it.spec)
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func (e *PushEncoder) appendFrame(buf []byte, spec *atollpb.TaskSpec) ([]byte, error) {
	var prefix, own []byte
	if sh := e.shapes.Of(spec); sh != nil {
		prefix = sh.Bytes()
		e.scratch = specpack.AppendOwn(e.scratch[:0], spec)
		own = e.scratch
	} else {
		b, err := proto.MarshalOptions{}.MarshalAppend(e.scratch[:0], spec)
		if err != nil {
			return buf, err
		}
		e.scratch, own = b, b
	}
	return appendPush(buf, prefix, own)
}

// appendPush appends a push_task frame of a spec encoded as prefix then own.
func appendPush(buf []byte, prefix, own []byte) ([]byte, error) {
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
