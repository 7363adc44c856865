package codec

import (
	"errors"
	"fmt"
	"math"
)

// checkGob walks the type definitions and the first value of a gob stream
// the way encoding/gob's Decoder reads them, without decoding anything,
// and refuses a stream that claims more than its bytes hold: a message
// longer than the data left, or a map of more entries than the bytes left
// could encode (a key and an element take a byte each at least).
//
// encoding/gob sizes a map from the count the stream claims before it
// reads a single entry (reflect.MakeMapWithSize; golang/go#79539, fixed
// after Go 1.26), so a 30-byte object decoded into a type holding a map
// could make it allocate gigabytes, and a map of empty structs at the end
// of a message loops once per claimed entry. Slices, strings and byte
// strings gob bounds itself. A message of length n it reads in 10 MiB
// chunks, so the length check only saves a pointless allocation.
//
// The walk follows the decoder's reading rules (one buffer per message, a
// struct may end with its message instead of a terminator, an interface
// value may carry type definitions and move on to the next message) and
// is stricter only on streams no gob.Encoder writes. Drop it when the Go
// the module requires bounds map sizes itself.
func checkGob(data []byte) error {
	s := gobScan{stream: data, types: map[int32]*gobWire{}}
	id, err := s.typeSequence(false)
	if err != nil {
		return err
	}
	return s.top(id)
}

// Gob's predefined type ids (encoding/gob/type.go) that values use.
const (
	gobBoolID      = 1
	gobIntID       = 2
	gobUintID      = 3
	gobFloatID     = 4
	gobBytesID     = 5
	gobStringID    = 6
	gobComplexID   = 7
	gobInterfaceID = 8
	// gobFirstUser is the first id a stream may define.
	gobFirstUser = 64
	// gobTooBig is gob's bound on a message's length (on 64-bit machines).
	gobTooBig = 1 << 31
	// gobMaxName is the longest interface type name gob accepts.
	gobMaxName = 1 << 10
)

type gobKind uint8

const (
	gobArray gobKind = iota + 1
	gobSlice
	gobStruct
	gobMap
	gobEncoded // GobEncoder, BinaryMarshaler, TextMarshaler: a byte string
)

// gobWire is a type the stream defined.
type gobWire struct {
	kind      gobKind
	key, elem int32   // map keys; array, slice and map elements
	length    int64   // arrays
	fields    []int32 // struct fields, in wire order
}

var (
	errGobShort = errors.New("gob stream ends early")
	errGobUint  = errors.New("gob stream holds a malformed unsigned integer")
)

// gobScan reads a gob stream: stream is what follows the current message,
// buf the rest of the current message.
type gobScan struct {
	stream, buf []byte
	types       map[int32]*gobWire
}

// left is the number of bytes not read yet.
func (s *gobScan) left() uint64 { return uint64(len(s.buf)) + uint64(len(s.stream)) }

// message makes the next message of the stream current.
func (s *gobScan) message() error {
	n, rest, err := gobUint(s.stream)
	if err != nil {
		return err
	}
	if n >= gobTooBig || n > uint64(len(rest)) {
		return fmt.Errorf("gob message of %d bytes in a stream of %d", n, len(rest))
	}
	s.buf, s.stream = rest[:n], rest[n:]
	return nil
}

func gobUint(b []byte) (uint64, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errGobShort
	}
	if b[0] <= 0x7f {
		return uint64(b[0]), b[1:], nil
	}
	n := -int(int8(b[0]))
	if n > 8 {
		return 0, nil, errGobUint
	}
	if len(b) < 1+n {
		return 0, nil, errGobShort
	}
	var x uint64
	for _, c := range b[1 : 1+n] {
		x = x<<8 | uint64(c)
	}
	return x, b[1+n:], nil
}

func (s *gobScan) uint() (uint64, error) {
	x, rest, err := gobUint(s.buf)
	if err != nil {
		return 0, err
	}
	s.buf = rest
	return x, nil
}

func (s *gobScan) int() (int64, error) {
	u, err := s.uint()
	if u&1 != 0 {
		return ^int64(u >> 1), err
	}
	return int64(u >> 1), err
}

// typeID reads a type id held in a type definition (a typeId field).
func (s *gobScan) typeID() (int32, error) {
	v, err := s.int()
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("gob type id %d out of range", v)
	}
	return int32(v), nil
}

// skip skips a byte string (string, []byte, interface name, GobEncoder
// bytes) and returns its length.
func (s *gobScan) skip() (uint64, error) {
	n, err := s.uint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(s.buf)) {
		return 0, fmt.Errorf("gob string of %d bytes in a message of %d left", n, len(s.buf))
	}
	s.buf = s.buf[n:]
	return n, nil
}

// typeSequence reads type definitions up to the id of a value, as gob's
// decodeTypeSequence: iface is set inside an interface value, where the
// definitions share the value's message.
func (s *gobScan) typeSequence(iface bool) (int32, error) {
	for {
		if len(s.buf) == 0 {
			if err := s.message(); err != nil {
				return 0, err
			}
		}
		v, err := s.int()
		if err != nil {
			return 0, err
		}
		id := int32(v) // as gob converts it
		if id >= 0 {
			return id, nil
		}
		if err := s.define(-id); err != nil {
			return 0, err
		}
		if len(s.buf) > 0 {
			if !iface {
				return 0, errors.New("gob type definition followed by extra data")
			}
			if _, err := s.uint(); err != nil { // the count of what follows, unused
				return 0, err
			}
		}
	}
}

// fields reads the fields of a struct of n fields, calling field with each
// field's number: a delta from the previous one, until a zero delta or the
// end of the message.
func (s *gobScan) fields(n int, field func(i int) error) error {
	i := -1
	for len(s.buf) > 0 {
		d, err := s.uint()
		if err != nil {
			return err
		}
		if d == 0 {
			return nil
		}
		if d > uint64(n-1-i) {
			return fmt.Errorf("gob field %d+%d of a struct of %d fields", i, d, n)
		}
		i += int(d)
		if err := field(i); err != nil {
			return err
		}
	}
	return nil
}

// define reads the definition (a gob wireType) of type id.
func (s *gobScan) define(id int32) error {
	if id < gobFirstUser || s.types[id] != nil {
		return fmt.Errorf("gob type %d defined again", id)
	}
	w := &gobWire{}
	kinds := 0
	// wireType: ArrayT, SliceT, StructT, MapT, GobEncoderT,
	// BinaryMarshalerT, TextMarshalerT; each type starts with a
	// CommonType (Name, Id).
	err := s.fields(7, func(k int) error {
		kinds++
		var err error
		switch k {
		case 0: // arrayType: CommonType, Elem, Len
			w.kind = gobArray
			return s.fields(3, func(i int) error {
				switch i {
				case 0:
					return s.commonType()
				case 1:
					w.elem, err = s.typeID()
				default:
					w.length, err = s.int()
				}
				return err
			})
		case 1: // sliceType: CommonType, Elem
			w.kind = gobSlice
			return s.fields(2, func(i int) error {
				if i == 0 {
					return s.commonType()
				}
				w.elem, err = s.typeID()
				return err
			})
		case 2: // structType: CommonType, Field []fieldType{Name, Id}
			w.kind = gobStruct
			return s.fields(2, func(i int) error {
				if i == 0 {
					return s.commonType()
				}
				n, err := s.uint()
				if err != nil {
					return err
				}
				if n > s.left() {
					return fmt.Errorf("gob struct type of %d fields in %d bytes", n, s.left())
				}
				w.fields = make([]int32, 0, n)
				for range n {
					if len(s.buf) == 0 {
						return errGobShort
					}
					var ft int32
					if err := s.fields(2, func(j int) error {
						if j == 0 {
							_, err := s.skip()
							return err
						}
						ft, err = s.typeID()
						return err
					}); err != nil {
						return err
					}
					w.fields = append(w.fields, ft)
				}
				return nil
			})
		case 3: // mapType: CommonType, Key, Elem
			w.kind = gobMap
			return s.fields(3, func(i int) error {
				switch i {
				case 0:
					return s.commonType()
				case 1:
					w.key, err = s.typeID()
				default:
					w.elem, err = s.typeID()
				}
				return err
			})
		default: // gobEncoderType: CommonType
			w.kind = gobEncoded
			return s.fields(1, func(int) error { return s.commonType() })
		}
	})
	if err != nil {
		return err
	}
	if kinds != 1 {
		return fmt.Errorf("gob type %d defined as %d kinds of type", id, kinds)
	}
	s.types[id] = w
	return nil
}

// commonType reads a CommonType: Name, Id.
func (s *gobScan) commonType() error {
	return s.fields(2, func(i int) error {
		var err error
		if i == 0 {
			_, err = s.skip()
		} else {
			_, err = s.typeID()
		}
		return err
	})
}

// top reads a value as gob's decodeValue does: a struct's fields, or
// another value after a zero field delta.
func (s *gobScan) top(id int32) error {
	if w := s.types[id]; w == nil || w.kind != gobStruct {
		d, err := s.uint()
		if err != nil {
			return err
		}
		if d != 0 {
			return fmt.Errorf("gob value with field delta %d", d)
		}
	}
	return s.value(id)
}

// value reads one value of type id.
func (s *gobScan) value(id int32) error {
	var err error
	switch id {
	case gobBoolID, gobIntID, gobUintID, gobFloatID:
		_, err = s.uint()
		return err
	case gobComplexID:
		if _, err = s.uint(); err == nil {
			_, err = s.uint()
		}
		return err
	case gobBytesID, gobStringID:
		_, err = s.skip()
		return err
	case gobInterfaceID:
		return s.iface()
	}
	w := s.types[id]
	if w == nil {
		return fmt.Errorf("gob value of undefined type %d", id)
	}
	switch w.kind {
	case gobArray, gobSlice:
		n, err := s.uint()
		if err != nil {
			return err
		}
		if w.kind == gobArray && (w.length < 0 || n != uint64(w.length)) {
			return fmt.Errorf("gob array of %d elements, want %d", n, w.length)
		}
		if n > s.left() {
			return fmt.Errorf("gob slice of %d elements in %d bytes", n, s.left())
		}
		for range n {
			if len(s.buf) == 0 {
				return errGobShort
			}
			if err := s.value(w.elem); err != nil {
				return err
			}
		}
		return nil
	case gobMap:
		n, err := s.uint()
		if err != nil {
			return err
		}
		if n > s.left()/2 {
			return fmt.Errorf("gob map of %d entries in %d bytes", n, s.left())
		}
		for range n {
			if err := s.value(w.key); err != nil {
				return err
			}
			if err := s.value(w.elem); err != nil {
				return err
			}
		}
		return nil
	case gobStruct:
		return s.fields(len(w.fields), func(i int) error { return s.value(w.fields[i]) })
	default:
		_, err = s.skip()
		return err
	}
}

// iface reads an interface value: the concrete type's name (none for nil),
// type definitions, the concrete type's id, a byte count and the value.
func (s *gobScan) iface() error {
	n, err := s.skip()
	if err != nil || n == 0 {
		return err
	}
	if n > gobMaxName {
		return fmt.Errorf("gob interface type name of %d bytes", n)
	}
	id, err := s.typeSequence(true)
	if err != nil {
		return err
	}
	if _, err := s.uint(); err != nil { // the value's byte count, unused
		return err
	}
	return s.top(id)
}
