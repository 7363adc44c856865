package cluster

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/partition"
)

// Config configures a node's gateway.
type Config struct {
	NodeID ids.NodeID
	// Conn is the node's NATS connection (the control plane).
	Conn *nats.Conn
	// Prefix starts the subjects; default DefaultPrefix.
	Prefix string
	System *actor.ActorSystem
	Raylet *actor.PID
	Store  *actor.PID
	// StoreClient serves and receives transferred objects.
	StoreClient *objectstore.Client
	// OnTransfer, if set, is told of every object this node pulled from
	// another (or failed to), once the pull is over; it must not block.
	// The node's timeline and spans come from it.
	OnTransfer func(TransferEvent)
	GCS        *gcs.Client
	// NodeIP is the address peers reach this node at; default 127.0.0.1.
	NodeIP string
	// TransferPort and GossipPort: 0 picks free ports.
	TransferPort int
	GossipPort   int
	// Partition, if set, is the node's network switch: a fault plan's
	// partition (PartitionNode) cuts the node off through it. The node
	// must dial its NATS connection through it too (partition.Switch.Dial
	// as nats.SetCustomDialer). Nil: the node cannot be partitioned.
	Partition *partition.Switch
	// FailureBudget bounds the time to declare a failed node dead;
	// default membership.DefaultFailureBudget.
	FailureBudget time.Duration
	// ReportInterval is how often the node publishes its load; default
	// 100 ms.
	ReportInterval time.Duration
	// MaxInFlight bounds the bytes being pulled at once; default 256 MiB.
	MaxInFlight uint64
	// ConfirmInterval is how often the node confirms to each origin the
	// forwarded attempts it holds, and expires the attempts it forwarded
	// that their node stopped confirming. Default DefaultConfirmInterval
	// (or EnvConfirmInterval).
	ConfirmInterval time.Duration
	// ForwardLease: a forwarded attempt its node has not confirmed for
	// this long fails with FORWARD_LOST (ForwardLostError), within one
	// ConfirmInterval. Default EnvForwardLease if set, else
	// ForwardLeasePerBudget × FailureBudget (10 s by default); at least
	// twice ConfirmInterval.
	ForwardLease time.Duration
	// MaxDeadNodes bounds the dead nodes remembered; default
	// DefaultMaxDeadNodes (or EnvMaxDeadNodes).
	MaxDeadNodes int
	// StrangerGrace is how long work forwarded from a node that gossip
	// does not have as a live member is held, waiting for its join to
	// arrive, before it is dropped and refused with PERMISSION_DENIED;
	// default ForwardLease (or EnvStrangerGrace).
	StrangerGrace time.Duration
	// MaxOwners bounds the owner processes remembered; default
	// DefaultMaxOwners (or EnvMaxOwners).
	MaxOwners int
	// Secret keys the gossip (AES-GCM) and the object-transfer
	// handshake: peers without it can neither join nor pull. The zero
	// secret leaves both open (tests of this package only; nodes always
	// set it).
	Secret clusterkey.Secret
	// ServerTLS and ClientTLS, when set, make the transfer port speak TLS.
	ServerTLS, ClientTLS *tls.Config
	// MaxForwardedPerOrigin and MaxForwarded bound the tasks and actor
	// calls forwarded here that the node holds for one origin node and
	// for all of them; MaxForwardedBytesPerOrigin and MaxForwardedBytes
	// the encoded bytes of their specs. Work past a quota is refused back
	// to its owner with RESOURCE_EXHAUSTED (errs.ResourceExhaustedError).
	// Defaults DefaultMaxForwardedPerOrigin, ... (or EnvMaxForwardedPerOrigin,
	// ...).
	MaxForwardedPerOrigin      int
	MaxForwarded               int
	MaxForwardedBytesPerOrigin int
	MaxForwardedBytes          int
	// Node describes this node for its GCS registration (resources,
	// hostname, head/driver); Start fills in the addresses.
	Node   *atollpb.NodeInfo
	Logger *slog.Logger
	// Faults is the node's fault injector, if it has one: its rules for
	// actor kind "gateway" apply to what the gateway actor receives, and
	// the gateway serves its log on the node's "faults" subject
	// (RequestFaultLog).
	Faults *actors.FaultInjector

	// drop, for tests, discards a message arriving on one of the node's
	// subjects (kind: task, call, result, held, ...) when it returns true.
	drop func(kind string, m proto.Message) bool
}

// transferKey and gossipKey are the keys the secret derives for the
// object-transfer handshake and memberlist; none for the zero secret.
func (c *Config) transferKey() []byte {
	if c.Secret.IsZero() {
		return nil
	}
	return c.Secret.TransferKey()
}

func (c *Config) gossipKey() []byte {
	if c.Secret.IsZero() {
		return nil
	}
	return c.Secret.GossipKey()
}
