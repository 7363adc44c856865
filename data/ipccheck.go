package data

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// arrow-go's IPC reader trusts the flatbuffer of a message's metadata:
// it makes a slice as long as a vector says (a schema's fields, a
// field's children, its metadata, a union's type codes) before reading
// an element, and follows a field's children as deep as they go. One
// flipped byte in a schema's bytes asked it for 376 GB, which no recover
// catches: the process dies. Every message a block or a task's spec
// holds is checked here first (viewMessageReader), so that what the
// reader is given is in bounds, nests at most maxIPCDepth deep and names
// no more fields and strings than its bytes hold. The reader itself
// turns what else is wrong (an offset out of range) into an error.

// Message header types and the field types with vectors or strings in
// their type tables, as the Arrow format's Message.fbs and Schema.fbs
// number them.
const (
	ipcSchema          = 1
	ipcDictionaryBatch = 2
	ipcRecordBatch     = 3

	ipcTypeTimestamp = 10
	ipcTypeUnion     = 14
)

// maxIPCDepth bounds how deep a schema's fields nest.
const maxIPCDepth = 64

// ipcChecker walks one message's metadata flatbuffer.
type ipcChecker struct {
	b []byte
	// budget is what the tables and strings visited so far may still
	// take: the writer puts each in the buffer once, so visiting more
	// bytes than the buffer has means something is visited twice (a
	// child table shared by a thousand parents, each shared again; a
	// string shared by a million keys). Offsets only point forward, so
	// nothing is its own ancestor.
	budget int
}

var errIPCBounds = errors.New("out of bounds")

// checkIPCMeta checks the metadata flatbuffer b of an IPC message.
func checkIPCMeta(b []byte) error {
	c := &ipcChecker{b: b, budget: len(b)}
	msg, err := c.tableAt(0)
	if err != nil {
		return err
	}
	if err := c.keyValues(msg, 4); err != nil {
		return fmt.Errorf("message metadata: %w", err)
	}
	if _, err := c.scalar(msg, 3, 8); err != nil { // the body's length, which viewMessageReader reads
		return err
	}
	kind, err := c.u8(msg, 1)
	if err != nil {
		return err
	}
	header, ok, err := c.child(msg, 2)
	switch {
	case err != nil:
		return err
	case !ok:
		return nil // a message without a header: the reader refuses it
	}
	switch kind {
	case ipcSchema:
		return c.schema(header)
	case ipcRecordBatch:
		return c.recordBatch(header)
	case ipcDictionaryBatch:
		data, ok, err := c.child(header, 1)
		if err != nil || !ok {
			return err
		}
		return c.recordBatch(data)
	}
	return fmt.Errorf("a message of type %d", kind)
}

func (c *ipcChecker) schema(t int) error {
	n, start, err := c.vector(t, 1, 4)
	if err != nil {
		return fmt.Errorf("schema fields: %w", err)
	}
	for i := range n {
		f, err := c.uoffset(start + 4*i)
		if err != nil {
			return err
		}
		if err := c.field(f, 1); err != nil {
			return fmt.Errorf("field %d: %w", i, err)
		}
	}
	if err := c.keyValues(t, 2); err != nil {
		return fmt.Errorf("schema metadata: %w", err)
	}
	_, _, err = c.vector(t, 3, 8) // features
	return err
}

func (c *ipcChecker) field(pos, depth int) error {
	if depth > maxIPCDepth {
		return fmt.Errorf("fields nested deeper than %d", maxIPCDepth)
	}
	t, err := c.table(pos)
	if err != nil {
		return err
	}
	if err := c.str(t, 0); err != nil { // name
		return err
	}
	if err := c.keyValues(t, 6); err != nil {
		return err
	}
	kind, err := c.u8(t, 2)
	if err != nil {
		return err
	}
	if typ, ok, err := c.child(t, 3); err != nil {
		return err
	} else if ok {
		switch kind {
		case ipcTypeTimestamp:
			err = c.str(typ, 1) // time zone
		case ipcTypeUnion:
			_, _, err = c.vector(typ, 1, 4) // type codes
		}
		if err != nil {
			return err
		}
	}
	if dict, ok, err := c.child(t, 4); err != nil {
		return err
	} else if ok {
		if _, _, err := c.child(dict, 1); err != nil { // index type
			return err
		}
	}
	n, start, err := c.vector(t, 5, 4)
	if err != nil {
		return fmt.Errorf("children: %w", err)
	}
	for i := range n {
		f, err := c.uoffset(start + 4*i)
		if err != nil {
			return err
		}
		if err := c.field(f, depth+1); err != nil {
			return fmt.Errorf("child %d: %w", i, err)
		}
	}
	return nil
}

func (c *ipcChecker) recordBatch(t int) error {
	if _, _, err := c.vector(t, 1, 16); err != nil { // field nodes
		return err
	}
	if _, _, err := c.vector(t, 2, 16); err != nil { // buffers
		return err
	}
	if _, _, err := c.child(t, 3); err != nil { // compression
		return err
	}
	_, _, err := c.vector(t, 4, 8) // variadic buffer counts
	return err
}

// keyValues checks the vector of key-value tables in slot of table t.
func (c *ipcChecker) keyValues(t, slot int) error {
	n, start, err := c.vector(t, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		kt, err := c.tableAt(start + 4*i)
		if err != nil {
			return err
		}
		if err := c.str(kt, 0); err != nil {
			return err
		}
		if err := c.str(kt, 1); err != nil {
			return err
		}
	}
	return nil
}

// spend takes n bytes from the budget.
func (c *ipcChecker) spend(n int) error {
	c.budget -= n
	if c.budget < 0 {
		return errors.New("more tables and strings than its bytes hold")
	}
	return nil
}

// table checks the table at pos and its vtable, and returns pos.
func (c *ipcChecker) table(pos int) (int, error) {
	if err := c.spend(4); err != nil {
		return 0, err
	}
	if pos < 0 || pos+4 > len(c.b) {
		return 0, errIPCBounds
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(c.b[pos:])))
	if vt < 0 || vt+4 > len(c.b) {
		return 0, errIPCBounds
	}
	vlen := int(binary.LittleEndian.Uint16(c.b[vt:]))
	if vlen < 4 || vlen%2 != 0 || vt+vlen > len(c.b) {
		return 0, errIPCBounds
	}
	return pos, nil
}

// slot is the position of field slot of table t, or 0 when absent.
func (c *ipcChecker) slot(t, slot int) int {
	vt := t - int(int32(binary.LittleEndian.Uint32(c.b[t:])))
	vo := 4 + 2*slot
	if vo+2 > int(binary.LittleEndian.Uint16(c.b[vt:])) {
		return 0
	}
	off := int(binary.LittleEndian.Uint16(c.b[vt+vo:]))
	if off == 0 {
		return 0
	}
	return t + off
}

// u8 is the byte in slot of table t (0 when absent).
func (c *ipcChecker) u8(t, slot int) (byte, error) {
	p, err := c.scalar(t, slot, 1)
	if p == 0 || err != nil {
		return 0, err
	}
	return c.b[p], nil
}

// scalar is the position of the size-byte scalar in slot of table t (0
// when absent).
func (c *ipcChecker) scalar(t, slot, size int) (int, error) {
	p := c.slot(t, slot)
	if p != 0 && p+size > len(c.b) {
		return 0, errIPCBounds
	}
	return p, nil
}

// uoffset follows the offset at pos.
func (c *ipcChecker) uoffset(pos int) (int, error) {
	if pos < 0 || pos+4 > len(c.b) {
		return 0, errIPCBounds
	}
	to := pos + int(binary.LittleEndian.Uint32(c.b[pos:]))
	if to >= len(c.b) {
		return 0, errIPCBounds
	}
	return to, nil
}

// child is the table slot of table t points at, if any.
func (c *ipcChecker) child(t, slot int) (int, bool, error) {
	p := c.slot(t, slot)
	if p == 0 {
		return 0, false, nil
	}
	to, err := c.tableAt(p)
	return to, err == nil, err
}

// tableAt checks the table the offset at pos points at, and returns its
// position.
func (c *ipcChecker) tableAt(pos int) (int, error) {
	to, err := c.uoffset(pos)
	if err != nil {
		return 0, err
	}
	return c.table(to)
}

// vector is the length and the first element's position of the vector
// of elemSize-byte elements slot of table t points at (none: 0).
func (c *ipcChecker) vector(t, slot, elemSize int) (int, int, error) {
	p := c.slot(t, slot)
	if p == 0 {
		return 0, 0, nil
	}
	v, err := c.uoffset(p)
	if err != nil {
		return 0, 0, err
	}
	if v+4 > len(c.b) {
		return 0, 0, errIPCBounds
	}
	n := int(binary.LittleEndian.Uint32(c.b[v:]))
	if n > (len(c.b)-v-4)/elemSize {
		return 0, 0, fmt.Errorf("a vector of %d elements in %d bytes", n, len(c.b))
	}
	return n, v + 4, nil
}

// str checks the string slot of table t points at, if any.
func (c *ipcChecker) str(t, slot int) error {
	n, _, err := c.vector(t, slot, 1)
	if err != nil {
		return err
	}
	return c.spend(n)
}
