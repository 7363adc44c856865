package raylet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
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
// the hash makes sure that what runs is what the driver registered.

// maxTrustedBinaries bounds the binaries whose hash the raylet remembers
// (paths come from the network); past it the memory is cleared.
const maxTrustedBinaries = 64

// binaryStamp is a hashed file as it was when hashed: a file whose size
// or modification time changed is hashed again.
type binaryStamp struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

// checkBinary checks that spec's worker binary may run on this node.
// Only the raylet actor calls it (hashing a new binary blocks it once:
// ~30 ms for a 50 MB program).
func (r *raylet) checkBinary(spec *atollpb.TaskSpec, path string) error {
	if r.cfg.Process.InProcess != nil || path != spec.WorkerBinary || path == r.cfg.Process.Binary {
		return nil // the node's own worker binary (or in-process workers)
	}
	if len(spec.WorkerBinarySha256) != sha256.Size {
		return errs.Invalidf("task %s: node %s runs only a worker binary its driver registered with its hash; %q comes without one",
			spec.Name, r.cfg.NodeID.Short(), path)
	}
	if !filepath.IsAbs(path) {
		return errs.Invalidf("task %s: worker binary %q is not an absolute path", spec.Name, path)
	}
	sum, err := r.hashBinary(path)
	if err != nil {
		return errs.Invalidf("task %s: worker binary on node %s: %v", spec.Name, r.cfg.NodeID.Short(), err)
	}
	if !bytes.Equal(sum[:], spec.WorkerBinarySha256) {
		return errs.Invalidf("task %s: worker binary %s on node %s has SHA-256 %s…, the job's driver registered %s…: another build at the same path (deploy the driver's binary to every node, or start nodes with --worker-binary)",
			spec.Name, path, r.cfg.NodeID.Short(), hex.EncodeToString(sum[:6]), hex.EncodeToString(spec.WorkerBinarySha256[:6]))
	}
	return nil
}

// hashBinary returns the SHA-256 of the regular, executable file at path,
// from memory when the file did not change.
func (r *raylet) hashBinary(path string) ([sha256.Size]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return [sha256.Size]byte{}, errs.Invalidf("%s is not an executable file", path)
	}
	if st, ok := r.binaries[path]; ok && st.size == fi.Size() && st.mtime.Equal(fi.ModTime()) {
		return st.sum, nil
	}
	sum, err := HashFile(path)
	if err != nil {
		return sum, err
	}
	if r.binaries == nil || len(r.binaries) >= maxTrustedBinaries {
		r.binaries = map[string]binaryStamp{}
	}
	r.binaries[path] = binaryStamp{size: fi.Size(), mtime: fi.ModTime(), sum: sum}
	return sum, nil
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
