package node

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

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

// AddressFile is where `atoll start --head` records the cluster address,
// for `atoll start`, `atoll status` and drivers given "auto".
func AddressFile() string { return filepath.Join(os.TempDir(), "atoll", "current_cluster") }

// ResolveAddress turns a user-given cluster address into a NATS URL: ""
// and "auto" read AddressFile; "host:port" gets the nats:// scheme.
func ResolveAddress(address string) (string, error) {
	if address == "" || address == "auto" {
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
// ResolveAddress reads it), naming the connection name, and returns the
// connection and its URL. An unreachable cluster is ErrUnavailable.
func DialCluster(address, name string, opts ...nats.Option) (*nats.Conn, string, error) {
	url, err := ResolveAddress(address)
	if err != nil {
		return nil, "", err
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name(name)}, opts...)...)
	if err != nil {
		return nil, "", errs.Unavailablef("cannot reach the cluster at %s: %v", url, err)
	}
	return nc, url, nil
}
