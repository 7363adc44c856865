package spill

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Op is a kind of file-system operation a Fault applies to.
type Op uint8

// The operations of FS and File that faults can target.
const (
	OpCreate Op = iota + 1 // FS.Create
	OpWrite                // File.Write
	OpRead                 // File.ReadAt
	OpRemove               // FS.Remove
	numOps
)

// String returns the operation's name.
func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpWrite:
		return "write"
	case OpRead:
		return "read"
	case OpRemove:
		return "remove"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Fault is one scripted failure of a FaultyFS.
type Fault struct {
	// Op is the operation that fails.
	Op Op
	// Err is what the failing operation returns. For OpWrite with Short
	// set, a nil Err makes a short write that reports no error (a broken
	// writer); callers must notice the count.
	Err error
	// Short makes a failing OpWrite write the first half of its bytes
	// before failing, as a disk that fills up mid-write does.
	Short bool
	// Corrupt makes a failing OpRead succeed with one byte flipped.
	Corrupt bool
	// Count is how many operations fail; negative fails every one until
	// FaultyFS.Clear.
	Count int
	// Dir, if set, limits the fault to files in that directory (or below).
	Dir string
}

// DiskFull returns the fault of a full disk: the next n writes (negative:
// all) write half their bytes and fail with ENOSPC.
func DiskFull(n int) Fault {
	return Fault{Op: OpWrite, Err: syscall.ENOSPC, Short: true, Count: n}
}

// ShortWrite returns the fault of a writer that loses bytes: the next n
// writes write half their bytes and report no error.
func ShortWrite(n int) Fault { return Fault{Op: OpWrite, Short: true, Count: n} }

// ReadError returns the fault of a failing disk: the next n reads fail with
// EIO.
func ReadError(n int) Fault { return Fault{Op: OpRead, Err: syscall.EIO, Count: n} }

// CorruptRead returns the fault of silently damaged data: the next n reads
// succeed with one byte flipped.
func CorruptRead(n int) Fault { return Fault{Op: OpRead, Corrupt: true, Count: n} }

// FaultyFS wraps an FS and makes scripted operations fail, as pebble's
// vfs/errorfs does. Faults are consumed in the order they were injected:
// an operation is failed by the first active fault that matches it. It is
// safe for concurrent use, so a test may script faults while a spiller
// works.
type FaultyFS struct {
	inner FS

	mu     sync.Mutex
	faults []*Fault
	fired  [numOps]int
}

var _ FS = (*FaultyFS)(nil)

// NewFaultyFS returns inner with no faults injected yet.
func NewFaultyFS(inner FS) *FaultyFS { return &FaultyFS{inner: inner} }

// Inject adds faults after those already scripted.
func (fs *FaultyFS) Inject(faults ...Fault) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range faults {
		if f.Dir != "" {
			f.Dir = filepath.Clean(f.Dir)
		}
		fs.faults = append(fs.faults, &f)
	}
}

// Clear removes every scripted fault: operations succeed again.
func (fs *FaultyFS) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.faults = nil
}

// Fired returns how many operations of kind op have been failed so far.
func (fs *FaultyFS) Fired(op Op) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.fired[op]
}

// take returns the fault that fails this operation, if any, consuming one
// of its counts.
func (fs *FaultyFS) take(op Op, name string) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.faults {
		if f.Op != op || (f.Dir != "" && !under(name, f.Dir)) {
			continue
		}
		out := *f
		if f.Count > 0 {
			if f.Count--; f.Count == 0 {
				fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
			}
		}
		fs.fired[op]++
		return out, true
	}
	return Fault{}, false
}

func under(name, dir string) bool {
	rel, err := filepath.Rel(dir, filepath.Dir(filepath.Clean(name)))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Create implements FS.
func (fs *FaultyFS) Create(name string) (File, error) {
	if f, ok := fs.take(OpCreate, name); ok {
		return nil, f.err(name)
	}
	file, err := fs.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: fs, name: name}, nil
}

// Open implements FS.
func (fs *FaultyFS) Open(name string) (File, error) {
	file, err := fs.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: fs, name: name}, nil
}

// Remove implements FS.
func (fs *FaultyFS) Remove(name string) error {
	if f, ok := fs.take(OpRemove, name); ok {
		return f.err(name)
	}
	return fs.inner.Remove(name)
}

// MkdirAll implements FS.
func (fs *FaultyFS) MkdirAll(dir string) error { return fs.inner.MkdirAll(dir) }

func (f Fault) err(name string) error {
	if f.Err == nil {
		return fmt.Errorf("spill: injected %s fault on %s", f.Op, name)
	}
	return f.Err
}

type faultyFile struct {
	File
	fs   *FaultyFS
	name string
}

func (f *faultyFile) Write(p []byte) (int, error) {
	fault, ok := f.fs.take(OpWrite, f.name)
	if !ok {
		return f.File.Write(p)
	}
	n := 0
	if fault.Short {
		var err error
		if n, err = f.File.Write(p[:len(p)/2]); err != nil {
			return n, err
		}
		if fault.Err == nil {
			return n, nil
		}
	}
	return n, fault.err(f.name)
}

func (f *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	fault, ok := f.fs.take(OpRead, f.name)
	if !ok {
		return f.File.ReadAt(p, off)
	}
	if !fault.Corrupt {
		return 0, fault.err(f.name)
	}
	n, err := f.File.ReadAt(p, off)
	if n > 0 {
		p[n/2] ^= 0x5a
	}
	return n, err
}
