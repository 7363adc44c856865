package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// memTarget is a Target keeping its files in memory.
type memTarget struct{ files map[string][]byte }

func newMemTarget() *memTarget { return &memTarget{files: map[string][]byte{}} }

func (m *memTarget) WriteFile(fill func(w io.Writer) error) (string, error) {
	var buf bytes.Buffer
	if err := fill(&buf); err != nil {
		return "", err
	}
	name := fmt.Sprintf("mem-%d", len(m.files))
	m.files[name] = buf.Bytes()
	return name, nil
}

func (m *memTarget) Open(name string) (Readable, error) {
	data, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("spill: open %s: no such file", name)
	}
	return memFile(data), nil
}

func (m *memTarget) Remove(name string) error {
	delete(m.files, name)
	return nil
}

type memFile []byte

func (f memFile) ReadAt(p []byte, off uint64) error {
	if off > uint64(len(f)) || uint64(len(p)) > uint64(len(f))-off {
		return fmt.Errorf("spill: read %d bytes at %d of a %d-byte file: %w", len(p), off, len(f), io.ErrUnexpectedEOF)
	}
	copy(p, f[off:])
	return nil
}

func (memFile) Close() error { return nil }

// spillFile returns a spill file of objects of the given sizes, as
// WriteBatch writes it.
func spillFile(tb testing.TB, sizes ...int) []byte {
	tb.Helper()
	tgt := newMemTarget()
	w, err := WriteBatch(tgt, testObjects(rand.New(rand.NewPCG(9, uint64(len(sizes)))), sizes...))
	if err != nil {
		tb.Fatal(err)
	}
	return tgt.files[w.File]
}

// fixIndexCRC rewrites the index checksum of the spill file data of size
// bytes if its footer places the index inside it, so that the fuzzer's
// changes to entries reach the checks past the checksum.
func fixIndexCRC(data []byte, size uint64) {
	if size < footerSize || size > uint64(len(data)) {
		return
	}
	footer := data[size-footerSize : size]
	count := uint64(binary.LittleEndian.Uint32(footer[12:]))
	at := binary.LittleEndian.Uint64(footer[16:])
	if at <= size-footerSize && size-footerSize-at == count*entrySize {
		binary.LittleEndian.PutUint32(footer[24:], crc32.ChecksumIEEE(data[at:at+count*entrySize]))
	}
}

// FuzzReadIndex reads the index of an arbitrary spill file (whose first
// size-cut bytes the caller says are the file; fix rewrites the index
// checksum to match). ReadIndex must never panic; it fails with ErrCorrupt
// or ErrVersion, or gives entries that lie wholly before the index, which
// ReadExtent then reads (failing only with ErrCorrupt).
func FuzzReadIndex(f *testing.F) {
	for _, sizes := range [][]int{{}, {0}, {1, 63, 100}, {5000, 0, 17}} {
		file := spillFile(f, sizes...)
		f.Add(file, uint8(0), false)
		f.Add(file, uint8(1), false)
		f.Add(file[:len(file)/2], uint8(0), false)
		if len(sizes) == 0 {
			continue
		}
		flipped := bytes.Clone(file)
		flipped[len(flipped)-footerSize-1] ^= 0x40 // the last entry's length
		f.Add(flipped, uint8(0), false)
		f.Add(flipped, uint8(0), true)
	}
	f.Add([]byte(Magic), uint8(0), false)
	f.Add(make([]byte, footerSize), uint8(0), true)
	f.Fuzz(func(t *testing.T, file []byte, cut uint8, fix bool) {
		file = bytes.Clone(file)
		size := uint64(len(file)) - min(uint64(cut), uint64(len(file)))
		if fix {
			fixIndexCRC(file, size)
		}
		tgt := newMemTarget()
		tgt.files["f"] = file
		index, err := ReadIndex(tgt, "f", size)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("ReadIndex of %d bytes: untyped error %v", size, err)
			}
			return
		}
		at := size - footerSize - uint64(len(index))*entrySize
		if size < footerSize+uint64(len(index))*entrySize {
			t.Fatalf("%d entries in a file of %d bytes", len(index), size)
		}
		r, _ := tgt.Open("f")
		for i, e := range index {
			if e.File != "f" {
				t.Fatalf("entry %d names file %q", i, e.File)
			}
			if end := e.Offset + e.Length; end < e.Offset || end > at {
				t.Fatalf("entry %d: %d bytes at %d, in a file whose index starts at %d", i, e.Length, e.Offset, at)
			}
			if err := ReadExtent(r, e.Extent, make([]byte, e.Length)); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read entry %d (%d bytes at %d): %v", i, e.Length, e.Offset, err)
			}
		}
	})
}
