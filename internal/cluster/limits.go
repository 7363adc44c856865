package cluster

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/atoll-runtime/atoll/internal/cluster/membership"
)

// Defaults of the gateway's bounds and of the forwarding lease. Each can
// be set in Config or, when Config leaves it zero, by its environment
// variable (so nodes started by `atoll start` or a test cluster can be
// tuned without code).
const (
	// DefaultConfirmInterval is how often a node confirms to each origin
	// the forwarded attempts it still holds: one small message per origin
	// per second costs nothing, and gives several renewals per lease.
	DefaultConfirmInterval = time.Second
	// ForwardLeasePerBudget sets the default forwarding lease: how long a
	// forwarded attempt may go without its node confirming that it holds
	// it before its owner is failed with FORWARD_LOST, as a multiple of
	// the gossip's failure budget (10 s with the default 5 s budget, ten
	// missed renewals). A node that dies is declared dead within its
	// budget, so its work fails as NODE_DIED first (owners retry it) and
	// the lease only catches messages lost between live nodes; a busy
	// node is never mistaken for a lost message, and a lost task or result
	// is still failed within seconds however long tasks run.
	ForwardLeasePerBudget = 2
	// DefaultMaxDeadNodes is how many dead (or departed) nodes a gateway
	// remembers, to ignore their late reports and copies. Every driver
	// that joins the cluster is a node that leaves when it exits, so a
	// long-lived node needs the cap; late messages of a dead node arrive
	// within seconds, and 1024 deaths cover more than that at any
	// realistic rate of drivers (one a second: 17 minutes).
	DefaultMaxDeadNodes = 1024
	// DefaultMaxOwners bounds the owner processes a gateway remembers
	// (owner -> node, to free their objects here if their node dies).
	// Entries go when the owner's process exits (OwnersExited) or its
	// node dies; the cap only catches entries whose exit notice was lost.
	// It is far above the owners a cluster has at once (MaxWorkers 1024
	// per node × 64 nodes); past it the oldest entry is forgotten, with a
	// warning: should its node die, its objects here are not freed.
	DefaultMaxOwners = 65536

	// DefaultMaxForwardedPerOrigin bounds the tasks and actor calls other
	// nodes forwarded here that one origin node may have held at once
	// (queued, waiting for a node able to run them, running, or relayed
	// on): past it the node refuses that origin's work with
	// RESOURCE_EXHAUSTED. A node holding work costs it about 1.3 KiB of
	// heap per task plus its spec; without a bound, a peer sending tasks
	// no node can run grew a node's heap without end. A driver forwards
	// every task it submits as soon as its arguments are ready, so the
	// bound is also the most ready tasks one driver can queue on one node:
	// 8192 is far above the CPU slots of a node, enough to keep it busy.
	DefaultMaxForwardedPerOrigin = 8192
	// DefaultMaxForwarded bounds the work held for all origins together
	// (origin ids are only what a message claims, so this is the bound
	// that holds against a peer posing as many nodes).
	DefaultMaxForwarded = 32768
	// DefaultMaxForwardedBytesPerOrigin and DefaultMaxForwardedBytes bound
	// the encoded size of the specs of that work (a spec carries its small
	// arguments inline, up to 100 KiB each).
	DefaultMaxForwardedBytesPerOrigin = 64 << 20
	DefaultMaxForwardedBytes          = 256 << 20
)

// Environment variables read when the matching Config field is zero.
const (
	EnvConfirmInterval = "ATOLL_FORWARD_CONFIRM_INTERVAL" // a time.Duration ("1s")
	EnvForwardLease    = "ATOLL_FORWARD_LEASE"            // a time.Duration ("10s")
	// EnvStrangerGrace: how long work from a node gossip does not have as
	// a member is held before it is refused (default: the forward lease).
	EnvStrangerGrace = "ATOLL_FORWARD_STRANGER_GRACE"
	EnvMaxDeadNodes  = "ATOLL_GATEWAY_MAX_DEAD_NODES"
	EnvMaxOwners     = "ATOLL_GATEWAY_MAX_OWNERS"
	// The quotas of forwarded work (counts, then bytes).
	EnvMaxForwardedPerOrigin      = "ATOLL_FORWARD_MAX_PER_ORIGIN"
	EnvMaxForwarded               = "ATOLL_FORWARD_MAX"
	EnvMaxForwardedBytesPerOrigin = "ATOLL_FORWARD_MAX_BYTES_PER_ORIGIN"
	EnvMaxForwardedBytes          = "ATOLL_FORWARD_MAX_BYTES"
)

// maxHeldPerMessage bounds the attempts one HeldWork message lists (about
// 22 bytes each: ~90 KB, far below NATS's 1 MiB default max payload).
const maxHeldPerMessage = 4096

// envDuration resolves a duration setting: v if set, else the
// environment variable, else def. Invalid or non-positive values of the
// variable are an error.
func envDuration(v time.Duration, env string, def time.Duration) (time.Duration, error) {
	if v > 0 {
		return v, nil
	}
	s := os.Getenv(env)
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("cluster: %s=%q: want a positive duration such as 5s", env, s)
	}
	return d, nil
}

// envInt is envDuration for counts.
func envInt(v int, env string, def int) (int, error) {
	if v > 0 {
		return v, nil
	}
	s := os.Getenv(env)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("cluster: %s=%q: want a positive integer", env, s)
	}
	return n, nil
}

// withLimits fills the zero bounds and lease settings of c.
func (c *Config) withLimits() error {
	var err error
	if c.ConfirmInterval, err = envDuration(c.ConfirmInterval, EnvConfirmInterval, DefaultConfirmInterval); err != nil {
		return err
	}
	budget := c.FailureBudget
	if budget <= 0 {
		budget = membership.DefaultFailureBudget
	}
	if c.ForwardLease, err = envDuration(c.ForwardLease, EnvForwardLease, ForwardLeasePerBudget*budget); err != nil {
		return err
	}
	if c.ForwardLease < 2*c.ConfirmInterval {
		return fmt.Errorf("cluster: the forward lease %v must be at least twice the confirm interval %v", c.ForwardLease, c.ConfirmInterval)
	}
	if c.StrangerGrace, err = envDuration(c.StrangerGrace, EnvStrangerGrace, c.ForwardLease); err != nil {
		return err
	}
	if c.MaxDeadNodes, err = envInt(c.MaxDeadNodes, EnvMaxDeadNodes, DefaultMaxDeadNodes); err != nil {
		return err
	}
	if c.MaxOwners, err = envInt(c.MaxOwners, EnvMaxOwners, DefaultMaxOwners); err != nil {
		return err
	}
	for _, q := range []struct {
		v   *int
		env string
		def int
	}{
		{&c.MaxForwardedPerOrigin, EnvMaxForwardedPerOrigin, DefaultMaxForwardedPerOrigin},
		{&c.MaxForwarded, EnvMaxForwarded, DefaultMaxForwarded},
		{&c.MaxForwardedBytesPerOrigin, EnvMaxForwardedBytesPerOrigin, DefaultMaxForwardedBytesPerOrigin},
		{&c.MaxForwardedBytes, EnvMaxForwardedBytes, DefaultMaxForwardedBytes},
	} {
		if *q.v, err = envInt(*q.v, q.env, q.def); err != nil {
			return err
		}
	}
	return nil
}

// fifoSet is a set that remembers the order in which its keys were added,
// so the oldest can be evicted first. Removed keys leave stale marks in
// the queue; they are skipped, trimmed from its front and compacted away
// when they outnumber the live ones. Not safe for concurrent use.
type fifoSet[K comparable] struct {
	seq   uint64
	at    map[K]uint64 // key -> the sequence number of its mark
	queue []fifoMark[K]
}

type fifoMark[K comparable] struct {
	key K
	seq uint64
}

func newFIFOSet[K comparable]() *fifoSet[K] { return &fifoSet[K]{at: map[K]uint64{}} }

// add adds key as the newest unless it is present; it reports whether it
// was added.
func (s *fifoSet[K]) add(key K) bool {
	if _, ok := s.at[key]; ok {
		return false
	}
	s.seq++
	s.at[key] = s.seq
	s.queue = append(s.queue, fifoMark[K]{key, s.seq})
	return true
}

func (s *fifoSet[K]) has(key K) bool {
	_, ok := s.at[key]
	return ok
}

func (s *fifoSet[K]) len() int { return len(s.at) }

// remove removes key; it reports whether it was present.
func (s *fifoSet[K]) remove(key K) bool {
	if _, ok := s.at[key]; !ok {
		return false
	}
	delete(s.at, key)
	s.trim()
	return true
}

// popOldest removes and returns the oldest key.
func (s *fifoSet[K]) popOldest() (K, bool) {
	s.trim()
	if len(s.queue) == 0 {
		var zero K
		return zero, false
	}
	k := s.queue[0].key
	delete(s.at, k)
	s.trim()
	return k, true
}

func (s *fifoSet[K]) stale(m fifoMark[K]) bool {
	seq, ok := s.at[m.key]
	return !ok || seq != m.seq
}

// trim drops the stale marks at the front of the queue, and compacts it
// when stale marks elsewhere outnumber the live ones.
func (s *fifoSet[K]) trim() {
	for len(s.queue) > 0 && s.stale(s.queue[0]) {
		s.queue[0] = fifoMark[K]{}
		s.queue = s.queue[1:]
	}
	if len(s.queue) > 2*len(s.at)+64 {
		live := make([]fifoMark[K], 0, len(s.at))
		for _, m := range s.queue {
			if !s.stale(m) {
				live = append(live, m)
			}
		}
		s.queue = live
	}
}
