package nodeconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// StateDir is this user's directory of local cluster state
// ($TMPDIR/atoll-<uid>): the address file, the head's secret file and
// GCS directory, `atoll start`'s node records and logs, and the binaries
// of submitted jobs. It is made 0700 and its files 0600; a directory or
// file there that another user owns, or that others may write, is not
// trusted (CheckOwned).
func StateDir() string { return filepath.Join(os.TempDir(), fmt.Sprintf("atoll-%d", os.Getuid())) }

// AddressFile is where `atoll start --head` records the cluster address,
// for `atoll start`, `atoll status` and drivers given "auto".
func AddressFile() string { return filepath.Join(StateDir(), "current_cluster") }

// SecretFile is where `atoll start --head` keeps the cluster secret on
// its machine (0600, in StateDir); nodes, drivers and the CLI on that
// machine read it when no other secret is given.
func SecretFile() string { return filepath.Join(StateDir(), "cluster_secret") }

// DefaultGCSDir is the GCS directory of a head not given one: "gcs" in
// StateDir(). StateDir is under $TMPDIR, which some systems empty at
// boot; give a head a directory on persistent storage (Config.GCSDir,
// `atoll start --head --gcs-dir`) for its state to survive the machine's
// restart too.
func DefaultGCSDir() string { return filepath.Join(StateDir(), "gcs") }

// MakeStateDir creates StateDir (0700), or checks that the existing one
// is this user's and closed to others.
func MakeStateDir() error {
	dir := StateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckOwned(dir)
}

// CheckOwned fails (ErrInvalidArgument) unless path belongs to this user
// and neither its group nor others may write it: on a shared machine,
// another user must not be able to point this user's drivers at their
// cluster or read its logs through it.
func CheckOwned(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return nil // not a Unix file system: nothing to check
	case int(st.Uid) != os.Getuid():
		return errs.Invalidf("%s belongs to uid %d, not to this user (%d): not trusted", path, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return errs.Invalidf("%s is writable by others (mode %v): not trusted", path, fi.Mode().Perm())
	}
	return nil
}
