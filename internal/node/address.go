package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Well-known ports of a cluster node. Each accepts 0 (pick a free port),
// which tests use.
const (
	// DefaultPort is the head's NATS client port: the address other
	// nodes and drivers join (`atoll start --address HOST:6380`).
	DefaultPort = 6380
	// DefaultGossipPort is the memberlist port (UDP and TCP) of every node.
	DefaultGossipPort = 7946
	// DefaultTransferPort is the port a node serves its objects on to
	// other nodes (Ray's object manager port).
	DefaultTransferPort = 8076
)

// EnvAddress is the environment variable a driver reads, when atoll.Init
// is given no WithAddress, to connect to a running cluster ("auto" reads
// the address file `atoll start --head` wrote). The CLI's cluster
// commands read it too.
const EnvAddress = "ATOLL_ADDRESS"

// StateDir is this user's directory of local cluster state
// ($TMPDIR/atoll-<uid>): the address file, and `atoll start`'s node
// records and logs. It is made 0700 and its files 0600; a directory or
// file there that another user owns, or that others may write, is not
// trusted (CheckOwned).
func StateDir() string { return filepath.Join(os.TempDir(), fmt.Sprintf("atoll-%d", os.Getuid())) }

// AddressFile is where `atoll start --head` records the cluster address,
// for `atoll start`, `atoll status` and drivers given "auto".
func AddressFile() string { return filepath.Join(StateDir(), "current_cluster") }

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

// ResolveAddress turns a user-given cluster address into a NATS URL: ""
// and "auto" read AddressFile; "host:port" gets the nats:// scheme.
func ResolveAddress(address string) (string, error) {
	if address == "" || address == "auto" {
		for _, p := range []string{StateDir(), AddressFile()} {
			if err := CheckOwned(p); err != nil && !os.IsNotExist(err) {
				return "", fmt.Errorf("the recorded cluster address: %w", err)
			}
		}
		b, err := os.ReadFile(AddressFile())
		if err != nil {
			return "", errs.NotFoundf("no cluster address given and none recorded in %s (is a head running? `atoll start --head`): %v", AddressFile(), err)
		}
		address = strings.TrimSpace(string(b))
	}
	if !strings.Contains(address, "://") {
		address = "nats://" + address
	}
	return address, nil
}

// DialCluster connects to the NATS server of the cluster at address (as
// ResolveAddress reads it) with creds (see Credentials; the zero value
// reads the environment and this machine's secret file), naming the
// connection name, and returns the connection and its URL. It connects
// as cluster.ClientUser with the secret, else as cluster.ReaderUser with
// a reader token (Credentials.ReaderToken). An unreachable cluster is
// ErrUnavailable; no secret or token, or one the cluster refuses, is
// ErrUnauthenticated.
func DialCluster(address, name string, creds Credentials, opts ...nats.Option) (*nats.Conn, string, error) {
	sec, err := creds.resolve()
	if err != nil {
		return nil, "", err
	}
	return dialCluster(address, name, sec, cluster.ClientUser, opts...)
}

// dialCluster connects as user (see security.natsOptions).
func dialCluster(address, name string, sec security, user string, opts ...nats.Option) (*nats.Conn, string, error) {
	url, err := ResolveAddress(address)
	if err != nil {
		return nil, "", err
	}
	if sec.secret.IsZero() && sec.natsCreds == "" && sec.readerToken == "" {
		return nil, "", errNoSecret(url)
	}
	all := append([]nats.Option{nats.Name(name), nats.ErrorHandler(closeOnViolation)}, sec.natsOptions(user)...)
	nc, err := nats.Connect(url, append(all, opts...)...)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return nil, "", errs.Unauthenticatedf("the cluster at %s refused this process's credentials (secret %s): does it hold the head's cluster secret? (%v)",
			url, sec.secret.Fingerprint(), err)
	}
	if err != nil {
		return nil, "", errs.Unavailablef("cannot reach the cluster at %s: %v", url, err)
	}
	return nc, url, nil
}

// lastViolation is the latest permissions violation a DialCluster
// connection was closed for.
var lastViolation atomic.Pointer[error]

// closeOnViolation closes a DialCluster connection the server refused a
// subject to (its role may not publish or subscribe there: a reader asking
// for a change): the requests waiting on it fail at once instead of at
// their deadlines, and LastPermissionViolation tells why.
func closeOnViolation(nc *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	e := errs.PermissionDeniedf("the cluster refused this command's credentials a subject (%v): a reader token only reads; changes need the cluster secret", err)
	lastViolation.Store(&e)
	go nc.Close() // not on the connection's own callback goroutine
}

// LastPermissionViolation is the ErrPermissionDenied of the latest
// DialCluster connection closed because the cluster refused it a subject,
// or nil.
func LastPermissionViolation() error {
	if e := lastViolation.Load(); e != nil {
		return *e
	}
	return nil
}
