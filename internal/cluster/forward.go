package cluster

import (
	"bytes"
	"cmp"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Forwarder is the forwarding state machine of one node's gateway: the
// work it sent to other nodes and their leases (pending), the work other
// nodes sent here and their quotas (inbound), the live peers' latest
// loads, the dead nodes, the owners of objects held here and the
// directory of copies of objects owned here. It decides; the gateway
// actor (its shell) does the I/O.
//
// Like owner.Table it does no I/O, starts no goroutine and reads no
// clock: events go in with Step, stamped with the time they happened,
// and what the world must do comes out as Effects, in order, taken with
// TakeEffects. Its behaviour is scripted in testdata/*.txt
// (forward_test.go), with several nodes' Forwarders and the messages
// between them held by the test.
//
// Not safe for concurrent use, except its owners table, which the
// fetcher shares (owners.go).
type Forwarder struct {
	cfg ForwarderConfig
	// pending: work sent to other nodes; inbound: work other nodes sent
	// here. Both are stacks per key: a task that spills back and forth
	// between two nodes passes through a gateway more than once, and its
	// result retraces the chain last in, first out.
	pending map[taskKey][]*forward
	inbound map[taskKey][]arrival
	// itemFailed: the generator attempts running here one of whose items
	// could not be sent back (too large); their result carries the error
	// (generators.go). An entry lives while the attempt's inbound does.
	itemFailed map[taskKey]*atollpb.ErrorInfo
	// ended are the attempts sent from here that ended while they may
	// still run on: generator attempts whose result came back (their
	// items may still come), and attempts failed as lost in transit
	// (FORWARD_LOST: their result may still come). By the link they went
	// on, with where their result went; the newest maxEnded, oldest first
	// in endedOrder. What comes late still reaches the owner, which frees
	// what it stored if it no longer wants it (late.go).
	ended      map[endedLink]endedAttempt
	endedOrder *fifoSet[endedLink]
	peers      map[ids.NodeID]*atollpb.NodeLoad
	// members are the nodes membership has as live (PeerJoined), this
	// one included. Work forwarded from a node that is not one is held
	// on probation: strangers has when its first such work arrived, at
	// most maxStrangers of them; a stranger still not a member a lease
	// later has its work dropped and refused, and joins outsiders, whose
	// work is refused at once until they join.
	members   map[ids.NodeID]bool
	strangers map[ids.NodeID]time.Time
	outsiders *fifoSet[ids.NodeID]
	// refusedStrangers counts the attempts refused for their origin since
	// the last lease tick's log line, by origin.
	refusedStrangers map[ids.NodeID]int
	// dead holds the nodes that died or left, oldest first, at most
	// cfg.MaxDeadNodes: their late reports, results and copies are
	// ignored.
	dead *fifoSet[ids.NodeID]
	// copies is the directory of the copies other nodes pulled of objects
	// owned on this node (the primary's node is in the object's value).
	copies map[ids.ObjectID][]ids.NodeID
	// owners maps nodes to the owners living there of objects held here.
	owners *owners
	// quota accounts for inbound by origin; work past it is refused.
	quota   *quota
	effects []Effect
	// freeSeq numbers this node's notices (forward_free.go), freeLog
	// keeps the last of them, notices what it applied of each other
	// node's.
	freeSeq uint64
	freeLog []loggedNotice
	notices map[ids.NodeID]*noticeStream
	// knownSince is when this node first heard of each live node (its
	// join, its first load report): the notices owed to it start there.
	knownSince map[ids.NodeID]time.Time
	// reports: the deaths told to the GCS and not yet accepted, by node
	// (the head's only; forward_report.go).
	reports map[ids.NodeID]*deathReport
	// forwardsLost counts attempts failed with FORWARD_LOST, renewals
	// the HeldWork messages applied, sweeps the lease ticks.
	forwardsLost, renewals, sweeps uint64
}

// ForwarderConfig configures a Forwarder. Zero fields take the defaults
// of Config (the environment is not read here: Config.withLimits does
// that for the gateway).
type ForwarderConfig struct {
	// Self is this node.
	Self ids.NodeID
	// IsHead: this node tells the GCS of the nodes that die (ReportDead).
	IsHead bool
	// ForwardLease: a forwarded attempt its node has not confirmed for
	// this long fails with FORWARD_LOST on the next LeaseTick.
	ForwardLease time.Duration
	// StrangerGrace: work from a node that is no member is held this long
	// for its join to arrive (default ForwardLease).
	StrangerGrace time.Duration
	// MaxDeadNodes, MaxOwners: the caps of those tables.
	MaxDeadNodes, MaxOwners int
	// The quotas of work forwarded here (quota.go).
	MaxForwardedPerOrigin      int
	MaxForwarded               int
	MaxForwardedBytesPerOrigin int
	MaxForwardedBytes          int
	// MaxPayload is the largest message the control plane carries (the
	// NATS server's max payload; SetMaxPayload); 0: no limit.
	MaxPayload int64
}

func (c *ForwarderConfig) withDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.ForwardLease <= 0 {
		c.ForwardLease = ForwardLeasePerBudget * membership.DefaultFailureBudget
	}
	if c.StrangerGrace <= 0 {
		c.StrangerGrace = c.ForwardLease
	}
	def(&c.MaxDeadNodes, DefaultMaxDeadNodes)
	def(&c.MaxOwners, DefaultMaxOwners)
	def(&c.MaxForwardedPerOrigin, DefaultMaxForwardedPerOrigin)
	def(&c.MaxForwarded, DefaultMaxForwarded)
	def(&c.MaxForwardedBytesPerOrigin, DefaultMaxForwardedBytesPerOrigin)
	def(&c.MaxForwardedBytes, DefaultMaxForwardedBytes)
}

// NewForwarder returns the empty forwarding state of node cfg.Self.
func NewForwarder(cfg ForwarderConfig) *Forwarder {
	cfg.withDefaults()
	return newForwarder(cfg, newOwners(cfg.MaxOwners, nil))
}

// newForwarder is NewForwarder with an owners table shared with the
// node's fetcher.
func newForwarder(cfg ForwarderConfig, own *owners) *Forwarder {
	cfg.withDefaults()
	f := &Forwarder{cfg: cfg, pending: map[taskKey][]*forward{}, inbound: map[taskKey][]arrival{},
		itemFailed: map[taskKey]*atollpb.ErrorInfo{}, ended: map[endedLink]endedAttempt{}, endedOrder: newFIFOSet[endedLink](), peers: map[ids.NodeID]*atollpb.NodeLoad{}, dead: newFIFOSet[ids.NodeID](),
		copies: map[ids.ObjectID][]ids.NodeID{}, owners: own,
		members: map[ids.NodeID]bool{cfg.Self: true}, strangers: map[ids.NodeID]time.Time{}, outsiders: newFIFOSet[ids.NodeID](),
		refusedStrangers: map[ids.NodeID]int{}, notices: map[ids.NodeID]*noticeStream{}, knownSince: map[ids.NodeID]time.Time{}, reports: map[ids.NodeID]*deathReport{}}
	f.quota = newQuota(&f.cfg)
	return f
}

// SetMaxPayload sets the largest message the control plane carries: a
// forward, result or item larger fails at once rather than vanish.
func (f *Forwarder) SetMaxPayload(n int64) { f.cfg.MaxPayload = n }

// Step applies one event that happened at now.
func (f *Forwarder) Step(now time.Time, ev Event) {
	switch e := ev.(type) {
	case SendTask:
		f.sendTask(now, e)
	case SendCall:
		f.sendCall(now, e)
	case CancelSent:
		f.cancelSent(e)
	case LocalResult:
		if e.Result.GeneratorItem != nil {
			// An item is not the end of the attempt: it goes back
			// without settling it (generators.go).
			f.itemFromRaylet(e.Result)
			return
		}
		f.answer(e.Result)
	case NoHost:
		f.noHost(e.Address)
	case PassAck:
		f.forwardAck(e.Ack, e.Hops)
	case Received:
		f.received(now, e.Msg)
	case LeaseTick:
		f.retryNotices(now)
		f.retryReports(now)
		f.expireStrangers(now)
		f.logRefused()
		f.logStrangers()
		f.confirmHeld()
		f.expire(now)
		f.sweeps++
	case PeerJoined:
		f.revive(e.Node)
		f.heardOf(now, e.Node)
		f.joined(e.Node)
	case PeerGone:
		f.nodeGone(now, e.Node, e.Died)
	case OwnerExited:
		// Tell every node, numbered (this one forgets the owner at once).
		f.sendFree(now, &atollpb.FreeObjects{ExitedOwners: [][]byte{e.Worker.Bytes()}})
	case Free:
		m := &atollpb.FreeObjects{ObjectIds: e.Objects, Revived: e.Revived}
		if !e.StrayOn.IsZero() {
			m.StrayNode = e.StrayOn.Bytes()
		}
		f.sendFree(now, m)
	case PublishFailed:
		f.publishFailed(e)
	case ReportAnswered:
		f.reportAnswered(now, e)
	}
}

// received applies a message from another node.
func (f *Forwarder) received(now time.Time, msg proto.Message) {
	switch m := msg.(type) {
	case *atollpb.ForwardTask:
		f.taskArrived(now, m)
	case *atollpb.ForwardActorCall:
		f.callArrived(now, m)
	case *atollpb.ForwardCancel:
		f.emit(ToRaylet{&atollpb.CancelTask{TaskId: m.TaskId, NonRecursive: m.NonRecursive}})
	case *atollpb.ForwardedResult:
		if from, err := ids.FromBytes(m.FromNode); err == nil && f.dead.has(from) {
			// From a node declared dead (healed from a partition, its
			// reconnect buffer flushed): its work was failed and retried.
			f.log(slog.LevelDebug, "cluster: result from a dead node dropped", "node", from.Short())
			return
		}
		if m.Result.GeneratorItem != nil {
			f.itemFromPeer(now, m)
			return
		}
		f.resultFromPeer(m)
	case *atollpb.ForwardGeneratorAck:
		f.emit(ToRaylet{m}) // its raylet writes it to the worker, or relays it
	case *atollpb.HeldWork:
		f.renew(ids.MustFromBytes(m.FromNode), m.Attempts, now)
	case *atollpb.OwnersExited:
		f.ownersExited(m)
	case *atollpb.NodeLoad:
		if node, err := ids.FromBytes(m.NodeId); err == nil {
			f.noticesSent(now, node, m.FreeSeq)
		}
		f.load(now, m)
	case *atollpb.ObjectCopies:
		f.addCopies(m)
	case *atollpb.FreeObjects:
		f.freed(now, m)
	case *atollpb.FreeRepair:
		f.repair(now, m)
	}
}

// TakeEffects returns the effects produced since the last call, in
// order, and forgets them.
func (f *Forwarder) TakeEffects() []Effect {
	e := f.effects
	f.effects = nil
	return e
}

func (f *Forwarder) emit(e Effect) { f.effects = append(f.effects, e) }

func (f *Forwarder) log(level slog.Level, msg string, args ...any) {
	f.emit(Log{Level: level, Msg: msg, Args: args})
}

// ForwarderStats are the sizes of a Forwarder's tables and its counters.
type ForwarderStats struct {
	// Pending: attempts sent to other nodes; Inbound: attempts held for
	// other nodes, and the bytes of their specs.
	Pending, Inbound int
	InboundBytes     int64
	Peers, DeadNodes int
	// Copies: objects with copies in the directory.
	Copies int
	// ForwardsLost: attempts failed with FORWARD_LOST; ForwardsRefused:
	// arrivals refused past a quota; Renewals: HeldWork applied; Sweeps:
	// lease ticks.
	ForwardsLost, ForwardsRefused, Renewals, Sweeps uint64
}

// Stats reports the Forwarder's sizes and counters.
func (f *Forwarder) Stats() ForwarderStats {
	s := ForwarderStats{InboundBytes: f.quota.total.bytes, Peers: len(f.peers), DeadNodes: f.dead.len(), Copies: len(f.copies),
		ForwardsLost: f.forwardsLost, ForwardsRefused: f.quota.refused, Renewals: f.renewals, Sweeps: f.sweeps}
	for _, st := range f.pending {
		s.Pending += len(st)
	}
	for _, st := range f.inbound {
		s.Inbound += len(st)
	}
	return s
}

// NoteOwner records that an object owned by owner (a process on
// ownerNode, hex) is held here: a pull's copy. The node's fetcher shares
// the gateway's owners table and records each pull; a copy is freed with
// its owner's exit or its node's death. A simulator's fetcher calls this.
func (f *Forwarder) NoteOwner(owner []byte, ownerNode string) { f.owners.record(owner, ownerNode) }

// Copies returns the nodes the directory lists as holding a copy of id
// (an object owned here).
func (f *Forwarder) Copies(id ids.ObjectID) []ids.NodeID { return slices.Clone(f.copies[id]) }

// SentTo returns the nodes this node forwarded the given attempt to and
// still waits on for its result (its pending entries, newest last): for
// harnesses and checks that ask where work is.
func (f *Forwarder) SentTo(task ids.TaskID, attempt int32) []ids.NodeID {
	var out []ids.NodeID
	for _, fw := range f.pending[taskKey{task: task, attempt: attempt}] {
		out = append(out, fw.node)
	}
	return out
}

// taskKey names one attempt of a task or one actor call.
type taskKey struct {
	task    ids.TaskID
	attempt int32
}

func keyOf(taskID []byte, attempt int32) taskKey {
	return taskKey{task: ids.MustFromBytes(taskID), attempt: attempt}
}

func compareKeys(a, b taskKey) int {
	return cmp.Or(bytes.Compare(a.task[:], b.task[:]), cmp.Compare(a.attempt, b.attempt))
}

// sortedKeys returns the keys of m in order, so that what is decided
// over a whole table comes out in the same order on every run.
func sortedKeys[V any](m map[taskKey]V) []taskKey {
	keys := make([]taskKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

func compareNodes(a, b ids.NodeID) int { return bytes.Compare(a[:], b[:]) }

// forward is a task or call this node sent to another node, waiting for
// its result.
type forward struct {
	node ids.NodeID
	// owner is where the result goes; relay: back on the link the attempt
	// came here on (owner is then the gateway itself).
	owner  *actor.PID
	relay  bool
	name   string
	isCall bool
	// generator: a streaming generator's attempt (its items come back
	// before its result).
	generator bool
	// renewed is when node last confirmed that it holds the attempt (at
	// first, when it was sent): past the lease, the attempt is lost.
	renewed time.Time
	// hops names the link: the ForwardTask's hops (0 for an actor call).
	// A generator's items and acks travel the links one by one.
	hops int32
}

// arrival is work another node sent here: the node to answer, for an
// actor call the host's local address, and the encoded size of its spec
// (counted against the origin's quota while it is held).
type arrival struct {
	origin  ids.NodeID
	address string
	size    int64
	hops    int32 // the ForwardTask's hops (0 for an actor call)
}
