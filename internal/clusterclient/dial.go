package clusterclient

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// ResolveAddress turns a user-given cluster address into a NATS URL: ""
// and "auto" read AddressFile; "host:port" gets the nats:// scheme.
func ResolveAddress(address string) (string, error) {
	if address == "" || address == "auto" {
		for _, p := range []string{nodeconfig.StateDir(), nodeconfig.AddressFile()} {
			if err := nodeconfig.CheckOwned(p); err != nil && !os.IsNotExist(err) {
				return "", fmt.Errorf("the recorded cluster address: %w", err)
			}
		}
		b, err := os.ReadFile(nodeconfig.AddressFile())
		if err != nil {
			return "", errs.NotFoundf("no cluster address given and none recorded in %s (is a head running? `atoll start --head`): %v", nodeconfig.AddressFile(), err)
		}
		address = strings.TrimSpace(string(b))
	}
	if !strings.Contains(address, "://") {
		address = "nats://" + address
	}
	return address, nil
}

// Dial connects to the NATS server of the cluster at address (as
// ResolveAddress reads it) with creds (see nodeconfig.Credentials; the
// zero value reads the environment and this machine's secret file),
// naming the
// connection name, and returns the connection and its URL. It connects
// as cluster.ClientUser with the secret, else as cluster.ReaderUser with
// a reader token (Credentials.ReaderToken). An unreachable cluster is
// ErrUnavailable; no secret or token, or one the cluster refuses, is
// ErrUnauthenticated.
func Dial(address, name string, creds nodeconfig.Credentials, opts ...nats.Option) (*nats.Conn, string, error) {
	sec, err := creds.Resolve()
	if err != nil {
		return nil, "", err
	}
	return DialAs(address, name, sec, cluster.ClientUser, opts...)
}

// DialAs is Dial with resolved credentials, connecting as user (one of
// the roles of cluster.Permissions: a node connects as
// cluster.NodeUser(id); see nodeconfig.Security.NATSOptions).
func DialAs(address, name string, sec nodeconfig.Security, user string, opts ...nats.Option) (*nats.Conn, string, error) {
	url, err := ResolveAddress(address)
	if err != nil {
		return nil, "", err
	}
	if sec.Secret.IsZero() && sec.NATSCreds == "" && sec.ReaderToken == "" {
		return nil, "", nodeconfig.ErrNoSecret(url)
	}
	all := append([]nats.Option{nats.Name(name), nats.ErrorHandler(closeOnViolation)}, sec.NATSOptions(user)...)
	nc, err := nats.Connect(url, append(all, opts...)...)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return nil, "", errs.Unauthenticatedf("the cluster at %s refused this process's credentials (secret %s): does it hold the head's cluster secret? (%v)",
			url, sec.Secret.Fingerprint(), err)
	}
	if err != nil {
		return nil, "", errs.Unavailablef("cannot reach the cluster at %s: %v", url, err)
	}
	return nc, url, nil
}

// lastViolation is the latest permissions violation a Dial
// connection was closed for.
var lastViolation atomic.Pointer[error]

// closeOnViolation closes a Dial connection the server refused a
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
// Dial connection closed because the cluster refused it a subject,
// or nil.
func LastPermissionViolation() error {
	if e := lastViolation.Load(); e != nil {
		return *e
	}
	return nil
}
