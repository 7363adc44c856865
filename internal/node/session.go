package node

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/atoll-runtime/atoll/internal/lockfile"
)

// A node without Config.SessionDir makes its own session directory in the
// temp directory, holds a lock file in it while it lives (package
// lockfile) and removes it when it stops. A node that died without
// stopping (kill -9, a crash, power loss) leaves the directory behind with
// its lock dropped by the kernel: the next node to start on the machine
// removes it.
const (
	sessionPrefix   = "atoll-session-"
	sessionLockFile = "session.lock"
)

// newSessionDir creates a session directory in the temp directory and its
// lock.
func newSessionDir() (string, *lockfile.Lock, error) {
	dir, err := os.MkdirTemp("", sessionPrefix)
	if err != nil {
		return "", nil, fmt.Errorf("atoll: session dir: %w", err)
	}
	lock, err := lockfile.Create(filepath.Join(dir, sessionLockFile))
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("atoll: session dir: %w", err)
	}
	return dir, lock, nil
}

// reapSessions removes the session directories in tmp whose node died,
// logging each. A directory without a lock file (being created, or from a
// version without locks) is left alone.
func reapSessions(tmp string, log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, sessionPrefix+"*"))
	for _, dir := range dirs {
		claim, ok, err := lockfile.Claim(filepath.Join(dir, sessionLockFile))
		if err != nil || !ok {
			continue
		}
		size := dirSize(dir)
		err = os.RemoveAll(dir)
		_ = claim.Release()
		if err != nil {
			log.Warn("remove the session directory of a dead node", slog.String("dir", dir), slog.Any("err", err))
			continue
		}
		log.Info("removed the session directory of a dead node", slog.String("dir", dir), slog.Int64("bytes", size))
	}
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
