// Package lockfile marks what a live process uses on disk with flock(2)
// locks, which the kernel drops when the process ends however it ends
// (exit, signal, kill -9, crash). A later process can then tell what a
// dead one left behind (a session directory, spill files) and reap it,
// with no pid files that a reused pid could fool.
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Lock is a lock file held by this process.
type Lock struct {
	f    *os.File
	path string
	keep bool // Release leaves the file (Hold)
}

// Create creates the lock file path and holds it. The file is written
// under a temporary name, locked and then renamed into place, so no other
// process sees path unlocked while its creator lives. The descriptor is
// close-on-exec: child processes do not inherit the lock.
func Create(path string) (*Lock, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("lockfile: %w", err)
	}
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, fmt.Errorf("lockfile: lock %s: %w", tmp.Name(), err)
	}
	if _, err := fmt.Fprintf(tmp, "%d\n", os.Getpid()); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, fmt.Errorf("lockfile: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, fmt.Errorf("lockfile: %w", err)
	}
	return &Lock{f: tmp, path: path}, nil
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Release removes the lock file (unless Hold took it) and drops the lock.
// It is safe to call more than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	var err error
	if !l.keep {
		err = os.Remove(l.path)
	}
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Claim takes the lock file path if no live process holds it: its
// creator died (or released it without removing it). The caller then
// removes what the lock guarded and Releases the claim, which removes the
// lock file. ok is false when a live process holds the lock or path does
// not exist.
func Claim(path string) (l *Lock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lockfile: %w", err)
	}
	if ok, err := tryLock(f, path); !ok {
		return nil, false, err
	}
	// The holder may have released it between our open and our lock: the
	// file we locked must still be the one at path.
	held, err1 := f.Stat()
	now, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		_ = f.Close()
		return nil, false, nil
	}
	return &Lock{f: f, path: path}, true, nil
}

// Hold takes the lock file path, creating it if needed, unless a live
// process holds it (ok false). The file is never removed, by Release
// either: every process that ever uses what it guards (a directory used
// by one process at a time, such as a head's GCS store) locks the same
// file, so no two can hold it at once, whatever the timing. The
// descriptor is close-on-exec.
func Hold(path string) (l *Lock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("lockfile: %w", err)
	}
	if ok, err := tryLock(f, path); !ok {
		return nil, false, err
	}
	return &Lock{f: f, path: path, keep: true}, true, nil
}

// tryLock takes f's exclusive flock without waiting; on false (another
// process holds it, or err) it has closed f.
func tryLock(f *os.File, path string) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return true, nil
	}
	_ = f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return false, fmt.Errorf("lockfile: lock %s: %w", path, err)
}
