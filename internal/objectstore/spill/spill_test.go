package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/atoll-runtime/atoll/internal/ids"
)

func testObjects(rng *rand.Rand, sizes ...int) []Object {
	objs := make([]Object, len(sizes))
	for i, n := range sizes {
		data := make([]byte, n)
		for k := range data {
			data[k] = byte(rng.Uint32())
		}
		objs[i] = Object{ID: ids.PutObjectID(ids.NewTaskID(), uint32(i)), Data: data}
	}
	return objs
}

// spillFiles lists the spill files in dir.
func spillFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if IsLockFile(e.Name()) {
			continue // the instance's lock file
		}
		if !IsSpillFile(e.Name()) {
			t.Errorf("stray file %s in spill directory", e.Name())
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

func TestWriteBatchRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := filepath.Join(t.TempDir(), "a", "b") // created on demand
	tgt, err := NewLocal([]string{dir}, LocalOptions{MaxUnlinked: -1})
	if err != nil {
		t.Fatal(err)
	}
	objs := testObjects(rng, 0, 1, 63, 4096, 3<<20, 17)
	w, err := WriteBatch(tgt, objs)
	if err != nil {
		t.Fatal(err)
	}
	if files := spillFiles(t, dir); len(files) != 1 || files[0] != w.File {
		t.Fatalf("files %v, wrote %s", files, w.File)
	}
	if fi, err := os.Stat(w.File); err != nil || uint64(fi.Size()) != w.Size {
		t.Fatalf("stat %v, size %d want %d", err, fi.Size(), w.Size)
	}
	// Read back in reverse order, each straight into its own buffer.
	for i := len(objs) - 1; i >= 0; i-- {
		dst := make([]byte, w.Extents[i].Length)
		if err := ReadObject(tgt, w.Extents[i], dst); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, objs[i].Data) {
			t.Fatalf("object %d differs", i)
		}
	}
	index, err := ReadIndex(tgt, w.File, w.Size)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range index {
		if e.ID != objs[i].ID || e.Extent != w.Extents[i] {
			t.Fatalf("index entry %d = %+v, want %v %+v", i, e, objs[i].ID, w.Extents[i])
		}
	}
	if err := ReadObject(tgt, w.Extents[3], make([]byte, 10)); err == nil {
		t.Fatal("read into a buffer of the wrong size succeeded")
	}
	if err := tgt.Remove(w.File); err != nil {
		t.Fatal(err)
	}
	if files := spillFiles(t, dir); len(files) != 0 {
		t.Fatalf("files left: %v", files)
	}
}

func TestLocalRoundRobinAndFailover(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "d0"), filepath.Join(root, "d1"), filepath.Join(root, "d2")}
	fs := NewFaultyFS(OS)
	tgt, err := NewLocal(dirs, LocalOptions{FS: fs, MaxUnlinked: -1})
	if err != nil {
		t.Fatal(err)
	}
	objs := testObjects(rand.New(rand.NewPCG(3, 4)), 1000)
	for range 6 {
		if _, err := WriteBatch(tgt, objs); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range dirs {
		if n := len(spillFiles(t, d)); n != 2 {
			t.Fatalf("%s holds %d files, want 2 (round-robin)", d, n)
		}
	}
	// d1 is full: its turn goes to the next directory, nothing is left in d1.
	fs.Inject(Fault{Op: OpWrite, Err: syscall.ENOSPC, Short: true, Count: -1, Dir: dirs[1]})
	for range 3 {
		w, err := WriteBatch(tgt, objs)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(w.File) == dirs[1] {
			t.Fatalf("wrote %s into the full directory", w.File)
		}
	}
	if n := len(spillFiles(t, dirs[1])); n != 2 || fs.Fired(OpWrite) != 1 {
		t.Fatalf("full directory holds %d files after %d failed writes", n, fs.Fired(OpWrite))
	}
	// Every directory full: the write fails with ENOSPC and leaves nothing.
	count := func() (n int) {
		for _, d := range dirs {
			n += len(spillFiles(t, d))
		}
		return n
	}
	before := count()
	fs.Inject(DiskFull(-1))
	if _, err := WriteBatch(tgt, objs); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write to full disks: %v", err)
	}
	if after := count(); after != before {
		t.Fatalf("a failed write left files: %d before, %d after", before, after)
	}
	fs.Clear()
	if _, err := WriteBatch(tgt, objs); err != nil {
		t.Fatal(err)
	}
}

func TestLocalWriteFaults(t *testing.T) {
	dir := t.TempDir()
	fs := NewFaultyFS(OS)
	tgt, err := NewLocal([]string{dir}, LocalOptions{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	objs := testObjects(rand.New(rand.NewPCG(5, 6)), 3<<20, 10)
	small := testObjects(rand.New(rand.NewPCG(5, 6)), 100, 10)
	// A short write that reports no error: buffered writes notice it
	// (io.ErrShortWrite); a large object going straight to the file is
	// written on from where the short write stopped, so its file is whole.
	fs.Inject(ShortWrite(1))
	if _, err := WriteBatch(tgt, small); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short buffered write: %v", err)
	}
	fs.Inject(ShortWrite(1))
	w, err := WriteBatch(tgt, objs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range w.Extents {
		dst := make([]byte, e.Length)
		if err := ReadObject(tgt, e, dst); err != nil || !bytes.Equal(dst, objs[i].Data) {
			t.Fatalf("object %d after a short direct write: %v", i, err)
		}
	}
	if err := tgt.Remove(w.File); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		objs  []Object
		fault Fault
		want  error
	}{
		{"disk full", objs, DiskFull(1), syscall.ENOSPC},
		{"disk full, small objects", small, DiskFull(1), syscall.ENOSPC},
		{"create fails", objs, Fault{Op: OpCreate, Err: syscall.EACCES, Count: 1}, syscall.EACCES},
	} {
		fs.Inject(tc.fault)
		if _, err := WriteBatch(tgt, tc.objs); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if files := spillFiles(t, dir); len(files) != 0 {
			t.Errorf("%s: left %v", tc.name, files)
		}
	}
}

func TestReadFaults(t *testing.T) {
	fs := NewFaultyFS(OS)
	tgt, err := NewLocal([]string{t.TempDir()}, LocalOptions{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	objs := testObjects(rand.New(rand.NewPCG(7, 8)), 5000)
	w, err := WriteBatch(tgt, objs)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 5000)
	fs.Inject(ReadError(1), CorruptRead(1))
	if err := ReadObject(tgt, w.Extents[0], dst); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read error: %v", err)
	}
	if err := ReadObject(tgt, w.Extents[0], dst); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt read: %v", err)
	}
	if err := ReadObject(tgt, w.Extents[0], dst); err != nil || !bytes.Equal(dst, objs[0].Data) {
		t.Fatalf("read after the faults: %v", err)
	}
	if fs.Fired(OpRead) != 2 {
		t.Fatalf("fired %d read faults, want 2", fs.Fired(OpRead))
	}
	// Past the end of the file.
	beyond := w.Extents[0]
	beyond.Offset = w.Size - 10
	if err := ReadObject(tgt, beyond, dst); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read past the end: %v", err)
	}
	if _, err := ReadIndex(tgt, w.File, w.Size-1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("index of a truncated size: %v", err)
	}
}

func TestNewLocalValidates(t *testing.T) {
	if _, err := NewLocal(nil, LocalOptions{}); err == nil {
		t.Error("no directories accepted")
	}
	if _, err := NewLocal([]string{""}, LocalOptions{}); err == nil {
		t.Error("empty directory name accepted")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal([]string{filepath.Join(file, "sub")}, LocalOptions{}); err == nil {
		t.Error("directory under a regular file accepted")
	}
	for name, want := range map[string]bool{
		"atoll-spill-0a0b0c0d-1.bin":      true,
		"/x/y/atoll-spill-0a0b0c0d-7.bin": true,
		"spill-1.bin":                     false,
		"atoll-spill-1.tmp":               false,
	} {
		if IsSpillFile(name) != want {
			t.Errorf("IsSpillFile(%q) != %v", name, want)
		}
	}
}

// An index entry whose offset plus length wraps around 2^64 would pass a
// check of offset+length against the index's offset, and hand its reader
// a length near 2^64 (FuzzReadIndex found it).
func TestReadIndexRejectsWrappingEntries(t *testing.T) {
	file := spillFile(t, 10, 20)
	at := uint64(len(file)) - footerSize - 2*entrySize
	for _, c := range []struct{ offset, length uint64 }{
		{math.MaxUint64 - 15, 48},
		{2, math.MaxUint64},
		{at, 1},
		{0, at + 1},
	} {
		bad := bytes.Clone(file)
		e := bad[at+entrySize:]
		binary.LittleEndian.PutUint64(e[24:], c.offset)
		binary.LittleEndian.PutUint64(e[32:], c.length)
		fixIndexCRC(bad, uint64(len(bad)))
		tgt := newMemTarget()
		tgt.files["f"] = bad
		if _, err := ReadIndex(tgt, "f", uint64(len(bad))); !errors.Is(err, ErrCorrupt) {
			t.Errorf("entry of %d bytes at %d (index at %d): %v", c.length, c.offset, at, err)
		}
	}
	// At the very end of the objects is fine.
	ok := bytes.Clone(file)
	binary.LittleEndian.PutUint64(ok[at+entrySize+24:], at-20)
	fixIndexCRC(ok, uint64(len(ok)))
	tgt := newMemTarget()
	tgt.files["f"] = ok
	if _, err := ReadIndex(tgt, "f", uint64(len(ok))); err != nil {
		t.Fatalf("entry ending at the index: %v", err)
	}
}
