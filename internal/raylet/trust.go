package raylet

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// A node started without a worker binary runs each job's own: the
// driver's program, named in every TaskSpec with its SHA-256 as the
// driver read it at Init. Before the raylet queues such a task it checks
// that the file at that path on this node is a regular executable with
// that hash. A task naming a binary without a hash, or one whose file
// differs (another build at the same path on this machine, or a file
// replaced since), fails with ErrInvalidArgument and is never executed.
// Only authenticated peers can send a task at all (the cluster secret);
// the hash makes sure that what runs is what the driver registered: the
// raylet copies the file while hashing it and runs the copy.

// maxBinaryStamps bounds the paths whose stamp the raylet remembers
// (paths come from the network); past it the memory is cleared.
const maxBinaryStamps = 64

// binaryStamp is a file as it was when copied: a file whose size or
// modification time changed is copied (and hashed) again.
type binaryStamp struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

// checkBinary checks that spec's worker binary may run on this node and
// returns the program its workers run: for a job's own binary, a
// content-addressed, read-only copy in the node's binary directory, made
// from the bytes that were hashed (binaryCopy). Workers are keyed by that
// path, so a rebuilt binary at the same path never reaches a worker of
// the old build, and what runs is exactly what was checked. Only the
// raylet actor calls it (copying a new binary blocks it once: ~50 ms for
// a 50 MB program).
func (r *raylet) checkBinary(spec *atollpb.TaskSpec, path string) (string, error) {
	if r.cfg.Process.InProcess != nil || path != spec.WorkerBinary || path == r.cfg.Process.Binary {
		return path, nil // the node's own worker binary (or in-process workers)
	}
	if len(spec.WorkerBinarySha256) != sha256.Size {
		return "", errs.Invalidf("task %s: node %s runs only a worker binary its driver registered with its hash; %q comes without one",
			spec.Name, r.cfg.NodeID.Short(), path)
	}
	if !filepath.IsAbs(path) {
		return "", errs.Invalidf("task %s: worker binary %q is not an absolute path", spec.Name, path)
	}
	var want [sha256.Size]byte
	copy(want[:], spec.WorkerBinarySha256)
	fi, err := os.Stat(path)
	if err != nil {
		return "", errs.Invalidf("task %s: worker binary on node %s: %v", spec.Name, r.cfg.NodeID.Short(), err)
	}
	if st, ok := r.stamps[path]; ok && st.size == fi.Size() && st.mtime.Equal(fi.ModTime()) && st.sum == want {
		if cp, ok := r.binaries[want]; ok {
			return cp, nil // the file did not change since it was copied
		}
	}
	cp, sum, err := r.binaryCopy(path, want)
	if err != nil {
		return "", errs.Invalidf("task %s: worker binary on node %s: %v", spec.Name, r.cfg.NodeID.Short(), err)
	}
	if sum != want {
		return "", errs.Invalidf("task %s: worker binary %s on node %s has SHA-256 %s…, the job's driver registered %s…: another build at the same path (deploy the driver's binary to every node, or start nodes with --worker-binary)",
			spec.Name, path, r.cfg.NodeID.Short(), hex.EncodeToString(sum[:6]), hex.EncodeToString(want[:6]))
	}
	if r.binaries == nil {
		r.binaries = map[[sha256.Size]byte]string{}
	}
	r.binaries[want] = cp
	if r.stamps == nil || len(r.stamps) >= maxBinaryStamps {
		r.stamps = map[string]binaryStamp{}
	}
	r.stamps[path] = binaryStamp{size: fi.Size(), mtime: fi.ModTime(), sum: sum}
	return cp, nil
}

// binaryCopy copies the regular, executable file at path into the node's
// binary directory, hashing the bytes as it copies them, and returns the
// copy (named by the hash, mode 0500) and the hash. A copy whose hash is
// not want is removed.
func (r *raylet) binaryCopy(path string, want [sha256.Size]byte) (string, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	src, err := os.Open(path)
	if err != nil {
		return "", sum, err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return "", sum, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", sum, errs.Invalidf("%s is not an executable file", path)
	}
	dir, err := r.binaryDir()
	if err != nil {
		return "", sum, err
	}
	tmp, err := os.CreateTemp(dir, ".copy-*")
	if err != nil {
		return "", sum, err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), src)
	if err == nil {
		err = tmp.Chmod(0o500)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", sum, err
	}
	copy(sum[:], h.Sum(nil))
	if sum != want {
		return "", sum, nil
	}
	cp := filepath.Join(dir, hex.EncodeToString(sum[:]))
	if err := os.Rename(tmp.Name(), cp); err != nil {
		return "", sum, err
	}
	return cp, sum, nil
}

// binaryDir is the directory of the copies of jobs' binaries
// (ProcessConfig.BinaryDir, or a private temporary directory made on
// first use and removed when the raylet stops).
func (r *raylet) binaryDir() (string, error) {
	if r.binDir != "" {
		return r.binDir, nil
	}
	if dir := r.cfg.Process.BinaryDir; dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		r.binDir = dir
		return dir, nil
	}
	dir, err := os.MkdirTemp("", "atoll-bin-")
	if err != nil {
		return "", err
	}
	r.binDir, r.ownBinDir = dir, true
	return dir, nil
}

// releaseBinary removes the copy of a job's binary no job uses any more
// (ReleaseBinary): running processes keep their image; a later task
// naming it makes a new copy.
func (r *raylet) releaseBinary(cp string) {
	for sum, p := range r.binaries {
		if p == cp {
			delete(r.binaries, sum)
		}
	}
	if r.binDir != "" && filepath.Dir(cp) == r.binDir {
		if err := os.Remove(cp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.cfg.Logger.Warn("raylet: removing a job binary's copy failed", "path", cp, "err", err)
		}
	}
	delete(r.procCfgs, cp)
}

// removeBinaries removes the copies of jobs' binaries as the raylet stops.
func (r *raylet) removeBinaries() {
	for _, cp := range r.binaries {
		r.releaseBinary(cp)
	}
	if r.ownBinDir {
		_ = os.RemoveAll(r.binDir)
	} else if r.binDir != "" {
		_ = os.Remove(r.binDir) // if empty
	}
}

// HashFile is the SHA-256 of a file's content (a driver hashes its
// binary with it for TaskSpec.worker_binary_sha256).
func HashFile(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
