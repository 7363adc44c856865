package membership

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/memberlist"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/partition"
)

// DefaultFailureBudget is the default time within which the survivors
// declare a failed node dead: short enough that tasks on a lost raylet are
// retried promptly, long enough (about twelve probe intervals) that a GC
// pause or a busy CPU does not get a healthy node killed.
const DefaultFailureBudget = 5 * time.Second

// MinFailureBudget is the smallest budget accepted: below it the probe
// interval would drop under 100 ms and gossip traffic would grow for no gain.
const MinFailureBudget = 1200 * time.Millisecond

// MaxMetaSize is the largest Config.Meta accepted: memberlist's limit
// (memberlist.MetaMaxSize) minus the one-byte header this package adds.
const MaxMetaSize = memberlist.MetaMaxSize - metaHeaderLen

// Config configures a Member. The zero value of every field but NodeID has a
// usable default; Start validates it.
type Config struct {
	// NodeID names this node; required. It is gossiped as the memberlist
	// node name (lowercase hex), so it must be unique in the cluster.
	NodeID ids.NodeID

	// BindAddr is the address to listen on for gossip (UDP) and state sync
	// (TCP). Default "0.0.0.0": all interfaces.
	BindAddr string
	// BindPort is the gossip port, UDP and TCP. 0 picks a free port (tests);
	// production nodes set it so that peers can be given a stable address.
	BindPort int
	// AdvertiseAddr is the address peers use to reach this node. Default "":
	// memberlist picks the first private address of BindAddr (or BindAddr
	// itself when it is a specific address such as 127.0.0.1).
	AdvertiseAddr string
	// AdvertisePort is the port peers use. Default 0: the bound port.
	AdvertisePort int

	// Meta is opaque node metadata gossiped to all members (the raylet's
	// address and resources), at most MaxMetaSize bytes. Default empty.
	Meta []byte

	// FailureBudget bounds the time between a node failing and the others
	// declaring it dead (NodeLeft{Dead: true}), for clusters of up to ten
	// nodes on a healthy network. Default DefaultFailureBudget (5 s);
	// at least MinFailureBudget. See failureSettings for the mapping.
	FailureBudget time.Duration

	// SecretKey, when set (16, 24 or 32 bytes), encrypts and
	// authenticates every gossip message with AES-GCM (memberlist's
	// keyring): a node without the key can neither read the gossip nor
	// join, suspect or declare anyone dead.
	SecretKey []byte

	// Partition, if set, is the node's network switch: its cuts (fault
	// plans) apply to gossip packets and streams (partition.Transport).
	Partition *partition.Switch

	// Logger receives memberlist's log output at debug level. Default
	// slog.Default().
	Logger *slog.Logger

	// System and Events, if both set, receive every membership event as an
	// actor message (NodeJoined, NodeLeft, NodeUpdated), in order. Set both
	// or neither. Delivery runs on a goroutine of its own, so memberlist is
	// never blocked; the actor should still use an unbounded mailbox (the
	// default), since Shutdown waits for a delivery in progress.
	System *actor.ActorSystem
	Events *actor.PID
}

// validate fills in defaults and checks the fields; it works on a copy.
func (c Config) validate() (Config, error) {
	if c.NodeID.IsZero() {
		return c, errors.New("membership: Config.NodeID is required")
	}
	if c.BindAddr == "" {
		c.BindAddr = "0.0.0.0"
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		return c, fmt.Errorf("membership: Config.BindPort %d out of range", c.BindPort)
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		return c, fmt.Errorf("membership: Config.AdvertisePort %d out of range", c.AdvertisePort)
	}
	if len(c.Meta) > MaxMetaSize {
		return c, fmt.Errorf("membership: Config.Meta is %d bytes, limit %d", len(c.Meta), MaxMetaSize)
	}
	c.Meta = clone(c.Meta)
	if n := len(c.SecretKey); n != 0 && n != 16 && n != 24 && n != 32 {
		return c, fmt.Errorf("membership: Config.SecretKey is %d bytes, want 16, 24 or 32", n)
	}
	c.SecretKey = clone(c.SecretKey)
	if c.FailureBudget == 0 {
		c.FailureBudget = DefaultFailureBudget
	}
	if c.FailureBudget < MinFailureBudget {
		return c, fmt.Errorf("membership: Config.FailureBudget %v below minimum %v", c.FailureBudget, MinFailureBudget)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if (c.System == nil) != (c.Events == nil) {
		return c, errors.New("membership: Config.System and Config.Events must be set together")
	}
	return c, nil
}

// failureSettings maps the failure budget B onto memberlist's SWIM knobs.
//
// A failed node is declared dead after (1) some member's turn to probe it
// comes up, (2) that probe (direct UDP ping, indirect pings through
// IndirectChecks peers, TCP fallback) fails, which takes at most one probe
// interval p, and (3) the suspicion timer fires. The suspicion timer starts at
// SuspicionMaxTimeoutMult × SuspicionMult × p and shrinks towards
// SuspicionMult × p as other members independently confirm the suspicion
// (for clusters under SuspicionMult nodes no confirmations are expected and
// the minimum applies at once); beyond ten nodes memberlist scales both by
// log10(n).
//
// With p = B/12, SuspicionMult 4 and SuspicionMaxTimeoutMult 2 the worst
// case for n ≤ 10 is p (wait for a probe) + p (failed probe) + 8p
// (unconfirmed suspicion) = 10p ≈ 0.83 B, leaving 2p for gossiping the dead
// message (GossipInterval ≤ p/4, RetransmitMult 4) and scheduling jitter.
// In a three-node cluster it is ≈ 6p = B/2. ProbeTimeout p/2 is far above a
// LAN round trip. Memberlist's own awareness (local health) scaling may
// stretch p on a starved node; that protects against false positives and is
// kept.
func failureSettings(budget time.Duration) (probeInterval, probeTimeout, gossipInterval time.Duration, suspicionMult, suspicionMaxMult int) {
	probeInterval = budget / 12
	probeTimeout = probeInterval / 2
	gossipInterval = min(200*time.Millisecond, probeInterval/4)
	return probeInterval, probeTimeout, gossipInterval, 4, 2
}

// memberlistConfig derives memberlist's configuration from the validated
// Config, starting from memberlist.DefaultLANConfig().
func (c *Config) memberlistConfig(events memberlist.EventDelegate, meta memberlist.Delegate) *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.NodeID.String()
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval, mc.SuspicionMult, mc.SuspicionMaxTimeoutMult = failureSettings(c.FailureBudget)
	// Stream (TCP) operations — joins, push/pull, TCP fallback probes —
	// must not outlast the budget either (LAN default: 10 s).
	mc.TCPTimeout = c.FailureBudget
	if len(c.SecretKey) > 0 {
		mc.SecretKey = c.SecretKey
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	mc.Events = events
	mc.Delegate = meta
	mc.LogOutput = nil
	mc.Logger = log.New(slogWriter{c.Logger}, "", 0)
	return mc
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
