package jobs

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"
)

// The binaries of submitted jobs stay in the machine's state directory
// (jobBinDir) after their jobs end, so that submitting the same build
// again uploads nothing. Without a bound a long-lived cluster's disks
// would fill with every build ever submitted. Each time a node installs
// a binary, it removes the least recently used others until those left
// take at most Config.MaxBinaryBytes; it never removes one that a job the
// GCS lists as not finished uses (its nodes may start workers from it
// at any time), nor one used within binaryIdle (an upload that a
// submission has not yet named). A binary is used when it is installed
// and each time an upload or a submission finds it.

const (
	// DefaultMaxBinaryBytes is Config.MaxBinaryBytes's default.
	DefaultMaxBinaryBytes = 8 << 30
	// binaryIdle: a binary used this recently is kept.
	binaryIdle = time.Hour
)

// storedBinary is one binary in jobBinDir: its directory (named by its
// SHA-256 in hex), bytes, and when it was last used (the directory's
// modification time).
type storedBinary struct {
	sum   string
	bytes int64
	used  time.Time
}

// storedBinaries lists the binaries in dir.
func storedBinaries(dir string) ([]storedBinary, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []storedBinary
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		b := storedBinary{sum: e.Name(), used: info.ModTime()}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if fi, err := f.Info(); err == nil && fi.Mode().IsRegular() {
				b.bytes += fi.Size()
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// pruneBinaries removes from dir the least recently used binaries until
// those left take at most max bytes, skipping those keep names (by hex
// SHA-256) and those used within binaryIdle of now. It returns the sums
// removed and the bytes they took.
func pruneBinaries(dir string, max int64, keep map[string]bool, now time.Time) ([]string, int64, error) {
	bins, err := storedBinaries(dir)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, b := range bins {
		total += b.bytes
	}
	slices.SortFunc(bins, func(a, b storedBinary) int { return a.used.Compare(b.used) })
	var removed []string
	var freed int64
	for _, b := range bins {
		if total <= max {
			break
		}
		if keep[b.sum] || now.Sub(b.used) < binaryIdle {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, b.sum)); err != nil {
			return removed, freed, err
		}
		removed = append(removed, b.sum)
		freed += b.bytes
		total -= b.bytes
	}
	return removed, freed, nil
}

// touchBinary marks the binary at path (jobBinaryPath) used now.
func touchBinary(path string, now time.Time) {
	_ = os.Chtimes(filepath.Dir(path), now, now)
}

// pruning: one prune of the machine's binaries at a time, per process.
var pruning atomic.Bool

// pruneAfterInstall removes binaries past the node's bound, in a
// goroutine of its own (it lists the jobs in the GCS and reads the
// directory; the actor does not wait). Without the GCS's list of jobs it
// removes nothing.
func (s *jobService) pruneAfterInstall() {
	if s.cfg.GCS == nil || !pruning.CompareAndSwap(false, true) {
		return
	}
	max := s.cfg.MaxBinaryBytes
	if max <= 0 {
		max = DefaultMaxBinaryBytes
	}
	go func() {
		defer pruning.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), jobGCSTimeout)
		defer cancel()
		jobs, err := s.cfg.GCS.ListJobs(ctx)
		if err != nil {
			s.log.Warn("job binaries: cannot list the jobs, so none is removed", "err", err)
			return
		}
		keep := map[string]bool{}
		for _, j := range jobs {
			if !j.Finished && len(j.WorkerBinarySha256) > 0 {
				keep[hex.EncodeToString(j.WorkerBinarySha256)] = true
			}
		}
		removed, freed, err := pruneBinaries(jobBinDir(), max, keep, time.Now())
		if err != nil {
			s.log.Warn("job binaries: cannot remove an unused one", "err", err)
		}
		if len(removed) > 0 {
			s.log.Info("job binaries: removed the least recently used", "count", len(removed), "bytes", freed, "bound", max)
		}
	}()
}
