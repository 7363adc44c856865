package data

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// A block is one Arrow record batch stored as one object: the bytes of an
// Arrow IPC stream (a schema message, one record batch message, the end of
// stream marker), put as a []byte.
//
// Reading a block does not copy its column buffers: the IPC stream
// reader is fed messages whose metadata and body are slices of the bytes
// given (a view of shared memory inside a task), so every column buffer
// of the record aliases them. What is decoded and allocated is only the
// small part: the schema and the record's flatbuffer header are parsed
// into Go structs (field names, types, buffer offsets). arrow-go's own
// ipc.NewReader copies each message body into allocator memory; that is
// why blocks are read through viewMessageReader below. Buffers of a
// compressed IPC stream would be decompressed (a copy); blocks are never
// written compressed.

// encodeBlock writes rec as an IPC stream.
func encodeBlock(rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(sliceBytes(rec)+64*rec.NumCols()) + 1024) // once: growing copies
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("data: encode block: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("data: encode block: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeBlock reads the record of a block in place: its buffers are
// slices of b, valid while b is. The caller releases the record.
func decodeBlock(b []byte) (arrow.RecordBatch, error) {
	r, err := ipc.NewReaderFromMessageReader(newViewMessageReader(b))
	if err != nil {
		return nil, errs.Malformedf(blockWhat, "%v", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, errs.Malformedf(blockWhat, "%v", err)
		}
		// A block of no batch: an empty record of the schema.
		return emptyBlockRecord(r.Schema())
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}

// decodeSchema reads only the schema of a block.
func decodeSchema(b []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReaderFromMessageReader(newViewMessageReader(b))
	if err != nil {
		return nil, errs.Malformedf(blockWhat, "schema: %v", err)
	}
	defer r.Release()
	return r.Schema(), nil
}

// encodeSchema writes a schema alone as an IPC stream (block metadata
// carries it this way).
func encodeSchema(s *arrow.Schema) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	_ = w.Close() // writes the schema message and the end marker
	return buf.Bytes()
}

// emptyBlockRecord is emptyRecord of a block's schema, which may have a
// type arrow-go cannot make nulls of (it panics).
func emptyBlockRecord(s *arrow.Schema) (rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, errs.Malformedf(blockWhat, "a schema of no rows: %v", p)
		}
	}()
	return emptyRecord(s), nil
}

func emptyRecord(s *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, s.NumFields())
	for i, f := range s.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	rec := array.NewRecordBatch(s, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// viewMessageReader is an ipc.MessageReader over bytes in memory whose
// messages are slices of those bytes (no copy).
type viewMessageReader struct {
	b    []byte
	refs atomic.Int64
	msg  *ipc.Message
}

func newViewMessageReader(b []byte) *viewMessageReader {
	r := &viewMessageReader{b: b}
	r.refs.Store(1)
	return r
}

const ipcContinuation = 0xFFFFFFFF

func (r *viewMessageReader) Message() (*ipc.Message, error) {
	if len(r.b) < 4 {
		return nil, io.EOF
	}
	n := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	if n == ipcContinuation {
		if len(r.b) < 4 {
			return nil, io.ErrUnexpectedEOF
		}
		n = binary.LittleEndian.Uint32(r.b)
		r.b = r.b[4:]
	}
	if n == 0 {
		return nil, io.EOF
	}
	if int64(n) > int64(len(r.b)) || n < 4 {
		return nil, errs.Malformedf(blockWhat, "message metadata of %d bytes, %d left", n, len(r.b))
	}
	if err := checkIPCMeta(r.b[:n]); err != nil {
		return nil, errs.Malformedf(blockWhat, "message metadata: %v", err)
	}
	meta := memory.NewBufferBytes(r.b[:n])
	r.b = r.b[n:]
	msg := ipc.NewMessage(meta, memory.NewBufferBytes(nil))
	bodyLen := msg.BodyLen()
	msg.Release()
	if bodyLen < 0 || bodyLen > int64(len(r.b)) {
		return nil, errs.Malformedf(blockWhat, "message body of %d bytes, %d left", bodyLen, len(r.b))
	}
	body := memory.NewBufferBytes(r.b[:bodyLen])
	r.b = r.b[bodyLen:]
	if r.msg != nil {
		r.msg.Release()
	}
	r.msg = ipc.NewMessage(meta, body)
	return r.msg, nil
}

func (r *viewMessageReader) Retain() { r.refs.Add(1) }

func (r *viewMessageReader) Release() {
	if r.refs.Add(-1) == 0 && r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
}

// sliceBytes is what a block of rec holds, give or take the IPC
// framing: of a slice, only its rows' share where the layout says which
// bytes those are (fixed-width values, strings and binaries; validity
// bitmaps), the whole buffers for other layouts. (A slice's buffers are
// its parent's: counting them whole, encoding each of a record's n
// slices reserved n times the record.)
func sliceBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += arraySliceBytes(c)
	}
	return n
}

func arraySliceBytes(a arrow.Array) int64 {
	rows := int64(a.Len())
	bitmap := (rows + 7) / 8
	var offs []int32
	switch c := a.(type) {
	case *array.String:
		offs = c.ValueOffsets()
	case *array.Binary:
		offs = c.ValueOffsets()
	}
	if len(offs) > 0 {
		return bitmap + 4*int64(len(offs)) + int64(offs[len(offs)-1]-offs[0])
	}
	if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth() >= 8 {
		return bitmap + rows*int64(fw.BitWidth()/8)
	}
	return dataBytes(a.Data())
}

// recordBytes is the size of rec's buffers (a slice's: its parent's).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}
