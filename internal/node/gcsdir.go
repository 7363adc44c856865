package node

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/lockfile"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// The GCS's durable state. A head with the embedded NATS server keeps the
// server's JetStream store, where the GCS's tables live, in its GCS
// directory: Config.GCSDir, by default DefaultGCSDir() (StateDir()/gcs).
// The directory outlives the head, so a head started again on it reloads
// the nodes, actors and jobs it knew (the nodes still running reconnect
// and register again; see the gateway). It is made 0700 and must be this
// user's and closed to others (CheckOwned): whoever writes it can make the
// head list nodes, actors and jobs of their choosing. One head at a time
// uses it: the head holds a flock on gcsLockFile in it while it runs, and
// a second head on the same directory fails to start instead of
// corrupting the store. An embedded single node (atoll.Init with no
// address) keeps its store in its session directory, which goes with it:
// a driver's own runtime has nothing to remember.

// gcsLockFile is the lock a head holds in its GCS directory.
const gcsLockFile = "gcs.lock"

// openGCSDir makes (or checks) the GCS directory dir, "" for the default,
// and locks it. It returns the directory and the lock to release once the
// NATS server has shut down.
func openGCSDir(dir string) (string, *lockfile.Lock, error) {
	if dir == "" {
		if err := nodeconfig.MakeStateDir(); err != nil {
			return "", nil, fmt.Errorf("atoll: GCS directory: %w", err)
		}
		dir = nodeconfig.DefaultGCSDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("atoll: GCS directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", nil, fmt.Errorf("atoll: GCS directory: %w", err)
	}
	if err := nodeconfig.CheckOwned(abs); err != nil {
		return "", nil, fmt.Errorf("atoll: GCS directory: %w", err)
	}
	lock, ok, err := lockfile.Hold(filepath.Join(abs, gcsLockFile))
	if err != nil {
		return "", nil, fmt.Errorf("atoll: GCS directory: %w", err)
	}
	if !ok {
		return "", nil, errs.Invalidf("GCS directory %s is in use by another head on this machine (it holds %s): give this head another directory (Config.GCSDir, --gcs-dir)", abs, gcsLockFile)
	}
	return abs, lock, nil
}
