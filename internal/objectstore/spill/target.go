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
	"syscall"

	"golang.org/x/sys/unix"

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
	// MaxUnlinked is the most spill files kept open with no name at once
	// (one descriptor each). Default: a quarter of the process's limit of
	// open files (RLIMIT_NOFILE), at most DefaultMaxUnlinked. Negative:
	// none; every file keeps its name until Remove.
	MaxUnlinked int
}

// DefaultMaxUnlinked caps the descriptors Local keeps for unlinked spill
// files by default. With files of up to 100 MiB (the store's batches) it
// covers 400 GiB of spilled objects; files beyond it keep their names.
const DefaultMaxUnlinked = 4096

func (o LocalOptions) maxUnlinked() int {
	switch {
	case o.MaxUnlinked < 0:
		return 0
	case o.MaxUnlinked > 0:
		return o.MaxUnlinked
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 64
	}
	return int(min(lim.Cur/4, DefaultMaxUnlinked))
}

// Space is implemented by targets that can tell how much room is left
// for spill files.
type Space interface {
	// Space returns the bytes free for a new file (in the directory with
	// the most room) and the size of that directory's file system.
	Space() (free, total uint64, err error)
}

// Puncher is implemented by targets that can give back the disk space of
// part of a file (an object freed while others in its file live on).
type Puncher interface {
	// Punch frees the bytes [off, off+length) of the named file; reads of
	// them return zeros afterwards.
	Punch(name string, off, length uint64) error
}

// Local is the Target of one or more local directories. Files go to the
// directories in turn (round-robin), so spilling to several disks uses all
// of them; a write that fails in one directory (disk full, I/O error) is
// retried in the next, and fails only when every directory failed.
// Directories are created when missing.
//
// A file's name is removed as soon as the file is created: Local keeps
// its descriptor, writes and reads through it, and closes it on Remove,
// so the kernel frees the file's space when the last object in it is
// removed or when the process dies, however it dies (kill -9 included).
// Names stay the handles callers pass back. At most MaxUnlinked files are
// held that way; further files keep their names until Remove.
//
// On the real file system each directory also holds a lock file of the
// instance ("atoll-spill-<tag>.lock", see package lockfile) while it
// lives: NewLocal reaps the named files of instances whose process died
// without cleaning up (files past MaxUnlinked, or a file whose process
// died between its creation and its unlinking), and Close removes the
// instance's own.
type Local struct {
	fs    FS
	dirs  []string
	tag   string
	next  atomic.Uint64 // round-robin position
	seq   atomic.Uint64 // file sequence number
	locks []*lockfile.Lock

	maxUnlinked int
	// mu guards unlinked: the open files with no name, by their old name
	// (nil: a place taken by a file being written). A leaf; files are
	// closed after it is released.
	mu       sync.Mutex
	unlinked map[string]File

	// Reaped counts the files and bytes of dead instances NewLocal removed.
	Reaped Reaped
}

// Reaped is what NewLocal removed from dead instances.
type Reaped struct{ Files, Bytes int64 }

var (
	_ Target  = (*Local)(nil)
	_ Space   = (*Local)(nil)
	_ Puncher = (*Local)(nil)
)

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
	l := &Local{fs: fs, tag: hex.EncodeToString(tag[:]), maxUnlinked: opts.maxUnlinked(), unlinked: make(map[string]File)}
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
	l.mu.Lock()
	open := make([]File, 0, len(l.unlinked))
	for name, f := range l.unlinked {
		if f != nil {
			open = append(open, f)
		}
		delete(l.unlinked, name)
	}
	l.mu.Unlock()
	for _, f := range open {
		if err := f.Close(); err != nil {
			errList = append(errList, err)
		}
	}
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
	// Unlink at once, before a byte is written: from here on only the
	// descriptor holds the file, and the kernel frees it with the process.
	unlinked := l.reserveUnlinked(name) && l.fs.Remove(name) == nil
	if !unlinked {
		l.releaseUnlinked(name)
	}
	w := writers.Get().(*bufio.Writer)
	w.Reset(f)
	if err = fill(w); err == nil {
		err = w.Flush()
	}
	w.Reset(io.Discard) // drop the reference to f before pooling
	writers.Put(w)
	if err == nil && unlinked {
		l.mu.Lock()
		l.unlinked[name] = f
		l.mu.Unlock()
		return name, nil
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.releaseUnlinked(name)
		if !unlinked {
			// Best effort: a partial file holds nothing anyone can read.
			_ = l.fs.Remove(name)
		}
		return "", fmt.Errorf("spill: write %s: %w", name, err)
	}
	return name, nil
}

// reserveUnlinked takes a place for name among the unlinked files, if
// the descriptor budget has one.
func (l *Local) reserveUnlinked(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unlinked) >= l.maxUnlinked {
		return false
	}
	l.unlinked[name] = nil // a place, filled once written
	return true
}

func (l *Local) releaseUnlinked(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.unlinked[name]; ok && f == nil {
		delete(l.unlinked, name)
	}
}

// takeUnlinked removes name from the unlinked files and returns its
// descriptor, if it is one.
func (l *Local) takeUnlinked(name string) (File, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.unlinked[name]
	if ok && f != nil {
		delete(l.unlinked, name)
		return f, true
	}
	return nil, false
}

func (l *Local) unlinkedFile(name string) File {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unlinked[name]
}

// Unlinked returns how many spill files the target holds open with no
// name (descriptors it keeps).
func (l *Local) Unlinked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.unlinked {
		if f != nil {
			n++
		}
	}
	return n
}

// Open implements Target.
func (l *Local) Open(name string) (Readable, error) {
	if f := l.unlinkedFile(name); f != nil {
		// The descriptor stays with the target; Close of the reader
		// leaves it open.
		return &localFile{f: f, name: name, shared: true}, nil
	}
	f, err := l.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("spill: open: %w", err)
	}
	return &localFile{f: f, name: name}, nil
}

type localFile struct {
	f      File
	name   string
	shared bool // the target's descriptor of an unlinked file
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

func (r *localFile) Close() error {
	if r.shared {
		return nil
	}
	return r.f.Close()
}

// Remove implements Target.
func (l *Local) Remove(name string) error {
	if f, ok := l.takeUnlinked(name); ok {
		if err := f.Close(); err != nil {
			return fmt.Errorf("spill: close %s: %w", name, err)
		}
		return nil
	}
	if err := l.fs.Remove(name); err != nil {
		return fmt.Errorf("spill: remove: %w", err)
	}
	return nil
}

// Space implements Space: statfs(2) of every directory, the one with the
// most room.
func (l *Local) Space() (free, total uint64, err error) {
	errList := make([]error, 0, 1)
	for _, d := range l.dirs {
		var st syscall.Statfs_t
		if err := syscall.Statfs(d, &st); err != nil {
			errList = append(errList, err)
			continue
		}
		if f := st.Bavail * uint64(st.Bsize); f >= free {
			free, total = f, st.Blocks*uint64(st.Bsize)
		}
	}
	if len(errList) == len(l.dirs) {
		return 0, 0, fmt.Errorf("spill: statfs: %w", errors.Join(errList...))
	}
	return free, total, nil
}

// Punch implements Puncher with fallocate(2) (FALLOC_FL_PUNCH_HOLE), on
// file systems and files that support it.
func (l *Local) Punch(name string, off, length uint64) error {
	if length == 0 || off > math.MaxInt64 || length > math.MaxInt64 {
		return nil
	}
	// Files that kept their name are left whole: they are few (past the
	// descriptor budget) and go with their last object.
	sc, ok := l.unlinkedFile(name).(syscall.Conn)
	if !ok {
		return nil // not a file of the operating system
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := raw.Control(func(fd uintptr) {
		perr = unix.Fallocate(int(fd), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(length))
	}); err != nil {
		return err
	}
	if perr != nil {
		return fmt.Errorf("spill: punch %d bytes at %d of %s: %w", length, off, name, perr)
	}
	return nil
}
