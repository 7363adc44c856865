package spill

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/internal/lockfile"
)

// Target stores spill files. Implementations are safe for concurrent use.
//
// A file is written once, as a whole, and never modified: WriteFile either
// stores every byte and returns the file's name, or fails and leaves
// nothing behind. Names are opaque to callers and only passed back to
// Open and Remove.
type Target interface {
	// WriteFile creates a new file, has fill write its content through w,
	// and returns the file's name. A file whose fill or writes fail is
	// removed. The target may call fill again for another new file (Local
	// does, in its next directory), so fill must write the same bytes
	// every time it is called.
	WriteFile(fill func(w io.Writer) error) (name string, err error)
	// Open opens the named file for reading.
	Open(name string) (Readable, error)
	// Remove deletes the named file.
	Remove(name string) error
}

// Readable is an open spill file.
type Readable interface {
	// ReadAt fills p with the bytes starting at off. A file shorter than
	// off+len(p) is an error.
	ReadAt(p []byte, off uint64) error
	// Close releases the file.
	Close() error
}

// Names of the files Local writes: FilePrefix, an instance tag, a sequence
// number and FileSuffix, e.g. "atoll-spill-1f2e3d4c-17.bin". The prefix
// makes them recognisable as atoll's in a shared directory; the instance
// tag keeps stores sharing a directory apart.
const (
	FilePrefix = "atoll-spill-"
	FileSuffix = ".bin"
)

// writeBufferSize is the buffer in front of each spill file. Writes
// smaller than it are coalesced into one write system call; larger ones go
// straight from the caller's memory to the file (WriteBatch writes objects
// in chunks four times as large).
const writeBufferSize = 64 << 10

var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, writeBufferSize) }}

// LocalOptions are the optional knobs of NewLocal.
type LocalOptions struct {
	// FS is the file system to use. Default: OS.
	FS FS
}

// Local is the Target of one or more local directories. Files go to the
// directories in turn (round-robin), so spilling to several disks uses all
// of them; a write that fails in one directory (disk full, I/O error) is
// retried in the next, and fails only when every directory failed.
// Directories are created when missing.
//
// On the real file system each directory holds a lock file of the
// instance ("atoll-spill-<tag>.lock", see package lockfile) while it
// lives: NewLocal reaps the files of instances whose process died without
// cleaning up (kill -9, a crash), and Close removes the instance's own.
type Local struct {
	fs    FS
	dirs  []string
	tag   string
	next  atomic.Uint64 // round-robin position
	seq   atomic.Uint64 // file sequence number
	locks []*lockfile.Lock
	// Reaped counts the files and bytes of dead instances NewLocal removed.
	Reaped Reaped
}

// Reaped is what NewLocal removed from dead instances.
type Reaped struct{ Files, Bytes int64 }

var _ Target = (*Local)(nil)

// NewLocal returns a Target writing into dirs, creating them if needed.
func NewLocal(dirs []string, opts LocalOptions) (*Local, error) {
	if len(dirs) == 0 {
		return nil, errors.New("spill: no spill directories")
	}
	fs := opts.FS
	if fs == nil {
		fs = OS
	}
	var tag [4]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return nil, fmt.Errorf("spill: instance tag: %w", err)
	}
	l := &Local{fs: fs, tag: hex.EncodeToString(tag[:])}
	for _, d := range dirs {
		if d == "" {
			_ = l.Close()
			return nil, errors.New("spill: empty spill directory name")
		}
		d = filepath.Clean(d)
		if err := fs.MkdirAll(d); err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("spill: create spill directory: %w", err)
		}
		l.dirs = append(l.dirs, d)
		if fs != OS {
			continue // locks need the real file system
		}
		reapDead(d, &l.Reaped)
		lock, err := lockfile.Create(filepath.Join(d, FilePrefix+l.tag+lockSuffix))
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("spill: %w", err)
		}
		l.locks = append(l.locks, lock)
	}
	return l, nil
}

const lockSuffix = ".lock"

// IsLockFile reports whether a file name (a base name or a path) has the
// shape of the lock files Local keeps beside its spill files.
func IsLockFile(name string) bool {
	base := filepath.Base(name)
	return strings.HasPrefix(base, FilePrefix) && strings.HasSuffix(base, lockSuffix)
}

// reapDead removes from dir the spill files of every instance whose lock
// no live process holds. Errors are ignored: what cannot be removed now is
// tried again by the next instance.
func reapDead(dir string, reaped *Reaped) {
	locks, _ := filepath.Glob(filepath.Join(dir, FilePrefix+"*"+lockSuffix))
	for _, path := range locks {
		claim, ok, err := lockfile.Claim(path)
		if err != nil || !ok {
			continue
		}
		tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), FilePrefix), lockSuffix)
		files, _ := filepath.Glob(filepath.Join(dir, FilePrefix+tag+"-*"+FileSuffix))
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && os.Remove(f) == nil {
				reaped.Files++
				reaped.Bytes += st.Size()
			}
		}
		_ = claim.Release()
	}
}

// Close removes every file the instance wrote that is still there and
// drops its locks. The Local must not be used afterwards.
func (l *Local) Close() error {
	var errList []error
	for _, d := range l.dirs {
		files, _ := filepath.Glob(filepath.Join(d, FilePrefix+l.tag+"-*"+FileSuffix))
		for _, f := range files {
			if err := l.fs.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				errList = append(errList, err)
			}
		}
	}
	for _, lock := range l.locks {
		if err := lock.Release(); err != nil {
			errList = append(errList, err)
		}
	}
	l.locks = nil
	return errors.Join(errList...)
}

// Dirs returns the directories the target writes to.
func (l *Local) Dirs() []string { return append([]string(nil), l.dirs...) }

// IsSpillFile reports whether a file name (a base name or a path) has the
// shape of the files Local writes.
func IsSpillFile(name string) bool {
	base := filepath.Base(name)
	return strings.HasPrefix(base, FilePrefix) && strings.HasSuffix(base, FileSuffix)
}

// WriteFile implements Target. It tries the directories in turn, starting
// after the one the previous file went to, until a write succeeds.
func (l *Local) WriteFile(fill func(w io.Writer) error) (string, error) {
	start := l.next.Add(1) - 1
	errList := make([]error, 0, 1)
	for i := range l.dirs {
		dir := l.dirs[(start+uint64(i))%uint64(len(l.dirs))]
		name, err := l.writeIn(dir, fill)
		if err == nil {
			return name, nil
		}
		errList = append(errList, err)
	}
	return "", errors.Join(errList...)
}

func (l *Local) writeIn(dir string, fill func(w io.Writer) error) (name string, err error) {
	if err := l.fs.MkdirAll(dir); err != nil {
		return "", fmt.Errorf("spill: create spill directory: %w", err)
	}
	name = filepath.Join(dir, fmt.Sprintf("%s%s-%d%s", FilePrefix, l.tag, l.seq.Add(1), FileSuffix))
	f, err := l.fs.Create(name)
	if err != nil {
		return "", fmt.Errorf("spill: create %s: %w", name, err)
	}
	w := writers.Get().(*bufio.Writer)
	w.Reset(f)
	if err = fill(w); err == nil {
		err = w.Flush()
	}
	w.Reset(io.Discard) // drop the reference to f before pooling
	writers.Put(w)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Best effort: a partial file holds nothing anyone can read.
		_ = l.fs.Remove(name)
		return "", fmt.Errorf("spill: write %s: %w", name, err)
	}
	return name, nil
}

// Open implements Target.
func (l *Local) Open(name string) (Readable, error) {
	f, err := l.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("spill: open: %w", err)
	}
	return &localFile{f: f, name: name}, nil
}

type localFile struct {
	f    File
	name string
}

func (r *localFile) ReadAt(p []byte, off uint64) error {
	if off > math.MaxInt64 {
		return fmt.Errorf("spill: read of %s at offset %d", r.name, off)
	}
	n, err := r.f.ReadAt(p, int64(off))
	if n == len(p) {
		return nil // io.EOF at the very end of the file is fine
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("spill: read %d bytes at %d of %s: %w", len(p), off, r.name, err)
}

func (r *localFile) Close() error { return r.f.Close() }

// Remove implements Target.
func (l *Local) Remove(name string) error {
	if err := l.fs.Remove(name); err != nil {
		return fmt.Errorf("spill: remove: %w", err)
	}
	return nil
}
