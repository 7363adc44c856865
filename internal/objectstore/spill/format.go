package spill

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// A spill file holds the bytes of its objects, each starting on a page
// (Page; zeros pad the gaps), then an index and a footer:
//
//	object 0 | pad | object 1 | pad | ... | index: one entry per object | footer
//	entry  (40 bytes): object id (20) | CRC-32 (4) | offset (8) | length (8)
//	footer (32 bytes): "ATOLLSPL" | version (4) | count (4) | index offset (8) | index CRC-32 (4) | zero (4)
//
// Integers are little-endian; checksums are CRC-32 (IEEE), which Go
// computes with carry-less multiplication at tens of GB/s. The store keeps
// every object's extent in memory and never reads the index back; it is
// there so that a spill file describes itself (ReadIndex, debugging
// tools).
//
// Objects are written and read in chunks of chunkSize, each checksummed
// right after it went through the kernel, while it is still in the CPU's
// cache: checksumming whole large objects separately would read them from
// memory a second time.
const (
	// Magic opens the footer of every spill file.
	Magic = "ATOLLSPL"
	// Version is the format version WriteBatch writes.
	Version = 1

	entrySize  = 40
	footerSize = 32
	chunkSize  = 256 << 10
)

// ErrCorrupt is matched (errors.Is) by the error of a read whose bytes do
// not match the checksum taken when they were spilled, and of a file whose
// index or footer is damaged.
var ErrCorrupt = errors.New("spill: corrupt spill data")

// ErrVersion is matched by the error of ReadIndex on a spill file of a
// format version this package does not read.
var ErrVersion = errors.New("spill: unsupported spill file version")

// Object is one object to spill: its id and its bytes (for the store, a
// view of the arena; WriteBatch only reads it).
type Object struct {
	ID   ids.ObjectID
	Data []byte
}

// Extent is where a spilled object's bytes lie, with their checksum.
type Extent struct {
	File   string
	Offset uint64
	Length uint64
	CRC    uint32
}

// Written describes a spill file WriteBatch wrote.
type Written struct {
	File string
	// Size is the file's size in bytes, index and footer included.
	Size uint64
	// Extents of the objects, in the order they were given.
	Extents []Extent
}

// IndexEntry is one object listed in a spill file's index.
type IndexEntry struct {
	ID ids.ObjectID
	Extent
}

// WriteBatch writes objs into one new file of t (fused, in order) and
// returns where each landed. It copies no object bytes of its own: the
// target gets the callers' slices (Local copies only small writes, into
// its write buffer).
func WriteBatch(t Target, objs []Object) (Written, error) {
	extents := make([]Extent, len(objs))
	var size uint64
	for i, o := range objs {
		extents[i] = Extent{Offset: size, Length: uint64(len(o.Data))}
		size = PageAlign(size + uint64(len(o.Data)))
	}
	tail := make([]byte, len(objs)*entrySize+footerSize)
	index, footer := tail[:len(objs)*entrySize], tail[len(objs)*entrySize:]
	fill := func(w io.Writer) error {
		var at uint64
		for i, o := range objs {
			if err := writeZeros(w, extents[i].Offset-at); err != nil {
				return err
			}
			at = extents[i].Offset + uint64(len(o.Data))
			var crc uint32
			for off := 0; off < len(o.Data); off += chunkSize {
				chunk := o.Data[off:min(off+chunkSize, len(o.Data))]
				if _, err := w.Write(chunk); err != nil {
					return err
				}
				crc = crc32.Update(crc, crc32.IEEETable, chunk)
			}
			extents[i].CRC = crc
			e := index[i*entrySize:]
			copy(e[:ids.ObjectIDLen], o.ID[:])
			binary.LittleEndian.PutUint32(e[20:], crc)
			binary.LittleEndian.PutUint64(e[24:], extents[i].Offset)
			binary.LittleEndian.PutUint64(e[32:], extents[i].Length)
		}
		if err := writeZeros(w, size-at); err != nil {
			return err
		}
		copy(footer, Magic)
		binary.LittleEndian.PutUint32(footer[8:], Version)
		binary.LittleEndian.PutUint32(footer[12:], uint32(len(objs)))
		binary.LittleEndian.PutUint64(footer[16:], size)
		binary.LittleEndian.PutUint32(footer[24:], crc32.ChecksumIEEE(index))
		_, err := w.Write(tail)
		return err
	}
	name, err := t.WriteFile(fill)
	if err != nil {
		return Written{}, err
	}
	for i := range extents {
		extents[i].File = name
	}
	return Written{File: name, Size: size + uint64(len(tail)), Extents: extents}, nil
}

// Page is the alignment of the objects in a spill file (and of its
// index): each object starts on a page of its own, so that the disk space
// of an object freed while others in its file live on can be given back
// whole (Puncher).
const Page = 4096

// PageAlign rounds n up to a multiple of Page.
func PageAlign(n uint64) uint64 { return (n + Page - 1) &^ (Page - 1) }

// FileSize returns the size of the spill file WriteBatch writes for
// objects of these lengths.
func FileSize(lengths ...uint64) uint64 {
	var size uint64
	for _, n := range lengths {
		size = PageAlign(size + n)
	}
	return size + TailSize(len(lengths))
}

// TailSize returns the size of a spill file's index and footer for n
// objects.
func TailSize(n int) uint64 { return uint64(n)*entrySize + footerSize }

var zeros [Page]byte

func writeZeros(w io.Writer, n uint64) error {
	for n > 0 {
		k := min(n, Page)
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// ReadObject reads the object at e from t into dst, which must be exactly
// e.Length bytes (for the store, the view of the arena block the object is
// restored into), and verifies its checksum. On error dst holds garbage.
func ReadObject(t Target, e Extent, dst []byte) error {
	r, err := t.Open(e.File)
	if err != nil {
		return err
	}
	defer r.Close()
	return ReadExtent(r, e, dst)
}

// ReadExtent is ReadObject from a file already open (e.File), for readers
// that keep files open across reads.
func ReadExtent(r Readable, e Extent, dst []byte) error {
	if uint64(len(dst)) != e.Length {
		return fmt.Errorf("spill: read of %d bytes into a buffer of %d", e.Length, len(dst))
	}
	var crc uint32
	for off := 0; off < len(dst); off += chunkSize {
		chunk := dst[off:min(off+chunkSize, len(dst))]
		if err := r.ReadAt(chunk, e.Offset+uint64(off)); err != nil {
			return err
		}
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
	}
	if crc != e.CRC {
		return fmt.Errorf("%w: %d bytes at %d of %s: checksum %08x, want %08x", ErrCorrupt, e.Length, e.Offset, e.File, crc, e.CRC)
	}
	return nil
}

// ReadIndex reads the index of the spill file name of size bytes. It
// trusts nothing in the file: a damaged footer or index, or an entry that
// does not lie wholly before the index, is ErrCorrupt; another format
// version is ErrVersion. Every extent it returns can be read.
func ReadIndex(t Target, name string, size uint64) ([]IndexEntry, error) {
	if size < footerSize {
		return nil, fmt.Errorf("%w: %s: %d bytes is too short for a spill file", ErrCorrupt, name, size)
	}
	r, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var footer [footerSize]byte
	if err := r.ReadAt(footer[:], size-footerSize); err != nil {
		return nil, err
	}
	if string(footer[:8]) != Magic {
		return nil, fmt.Errorf("%w: %s is not a spill file (bad magic)", ErrCorrupt, name)
	}
	if v := binary.LittleEndian.Uint32(footer[8:]); v != Version {
		return nil, fmt.Errorf("%w: %s has format version %d, want %d", ErrVersion, name, v, Version)
	}
	count := uint64(binary.LittleEndian.Uint32(footer[12:]))
	at := binary.LittleEndian.Uint64(footer[16:])
	if at > size || size-at != count*entrySize+footerSize {
		return nil, fmt.Errorf("%w: %s: index of %d entries at %d does not end the %d-byte file", ErrCorrupt, name, count, at, size)
	}
	index := make([]byte, count*entrySize)
	if err := r.ReadAt(index, at); err != nil {
		return nil, err
	}
	if crc32.ChecksumIEEE(index) != binary.LittleEndian.Uint32(footer[24:]) {
		return nil, fmt.Errorf("%w: %s: index checksum mismatch", ErrCorrupt, name)
	}
	out := make([]IndexEntry, count)
	for i := range out {
		e := index[i*entrySize:]
		copy(out[i].ID[:], e[:ids.ObjectIDLen])
		out[i].Extent = Extent{
			File:   name,
			CRC:    binary.LittleEndian.Uint32(e[20:]),
			Offset: binary.LittleEndian.Uint64(e[24:]),
			Length: binary.LittleEndian.Uint64(e[32:]),
		}
		// Offset+Length may wrap around: compare without adding.
		if x := out[i].Extent; x.Length > at || x.Offset > at-x.Length {
			return nil, fmt.Errorf("%w: %s: entry %d (%d bytes at %d) is not within the %d bytes before the index", ErrCorrupt, name, i, x.Length, x.Offset, at)
		}
	}
	return out, nil
}
