package cluster

import (
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/simbugs"
)

// Numbered notices. What a node tells every node about its owners — the
// objects they freed (and revived), the owner processes that exited —
// goes out on NATS, at most once: a node that misses a free (cut off from
// the NATS server for less than the failure timeout, so nobody declares
// it dead) kept the freed objects for good. So each node numbers its
// notices (FreeObjects.seq, 1, 2, 3, ... from origin_node) and keeps the
// last maxNoticeLog; every node applies each origin's notices in order,
// holds those that overtook a missing one, and asks the origin for the
// missing ones again (FreeRepair): when a later notice arrives, and when
// the origin's load report says it sent more than were applied (free_seq)
// — so a lost last notice is repaired too. Asking again waits a lease tick
// between two asks for the same notices. A notice the origin no longer
// has comes back marked missing and is skipped. A node applies its own
// notices as it sends them.
//
// Where a node's stream of an origin's notices starts: a node can hold
// objects of an origin's owners from the moment the origin (or, a gossip
// round earlier, any node) heard of it, and it may be cut off from the
// NATS server since then, so the first notice it hears is no start. A
// node that hears of an origin first at notice #1 (or by a load report
// saying none was sent) starts there; otherwise it holds what comes and
// asks the origin for every notice owed (FreeRepair first 0). The origin
// answers with owed_from: its first notice sent at most StrangerGrace
// before it heard of the asker (knownSince) — or before the ask, if it
// never did — then those notices.

// maxNoticeLog bounds the notices a node keeps to send again; maxHeld the
// notices of one origin held while an earlier one is missing.
const (
	maxNoticeLog = 4096
	maxHeld      = 4096
	// noticeAskEvery spaces two asks for the same missing notices.
	noticeAskEvery = time.Second
)

// KindFree is the subject of numbered notices: to every node (To zero)
// on <prefix>.free, or to one node (sent again) on its own subject.
// KindFreeRepair asks a node for notices again.
const (
	KindFree       = "free"
	KindFreeRepair = "freerepair"
)

// Free is a local owner's free (or revive, Revived) of objects: the
// Forwarder numbers it, applies it to the local store, and tells every
// other node. With StrayOn set it frees nothing: only the copies on that
// node go, which a late attempt stored there after their owner moved on
// (late.go); it travels as the other notices do, so a node cut off for a
// while still hears it.
type Free struct {
	Objects [][]byte
	Revived bool
	StrayOn ids.NodeID
}

func (Free) event() {}

// loggedNotice is a notice this node sent, kept to send again, and when.
type loggedNotice struct {
	msg  *atollpb.FreeObjects
	sent time.Time
}

// noticeStream is what a node applied of one origin's notices.
type noticeStream struct {
	// next is the number of the next notice to apply (0: not known yet,
	// asked for); held are later ones that arrived first.
	next uint64
	held map[uint64]*atollpb.FreeObjects
	// asked is the last number asked for again, at askedAt.
	asked   uint64
	askedAt time.Time
}

// FreeSeq is the number of the last notice this node sent (its load
// report's free_seq).
func (f *Forwarder) FreeSeq() uint64 { return f.freeSeq }

// sendFree numbers a notice, applies it here and publishes it to every
// other node.
func (f *Forwarder) sendFree(now time.Time, m *atollpb.FreeObjects) {
	f.freeSeq++
	m.OriginNode, m.Seq = f.cfg.Self.Bytes(), f.freeSeq
	f.freeLog = append(f.freeLog, loggedNotice{m, now})
	if len(f.freeLog) > maxNoticeLog {
		f.freeLog = slices.Delete(f.freeLog, 0, len(f.freeLog)-maxNoticeLog)
	}
	f.applyNotice(f.cfg.Self, m)
	f.emit(Publish{Kind: KindFree, Msg: m, Unsent: UnsentIgnored})
}

// freed is a notice from another node (or one of this node's own,
// looped back by the broadcast).
func (f *Forwarder) freed(now time.Time, m *atollpb.FreeObjects) {
	origin, err := ids.FromBytes(m.OriginNode)
	if err == nil && m.OwedFrom != 0 {
		f.owedFrom(now, origin, m.OwedFrom)
		return
	}
	if err != nil || m.Seq == 0 {
		f.applyNotice(ids.NodeID{}, m) // not numbered: as it comes
		return
	}
	if origin == f.cfg.Self {
		return // applied as it was sent
	}
	if f.dead.has(origin) {
		return // what it owned here went with it
	}
	s := f.notices[origin]
	if s == nil {
		// The first notice heard of it: #1 starts the stream; after it,
		// the origin says which earlier ones are owed.
		s = f.newStream(origin, m.Seq == 1, 1)
	}
	switch {
	case s.next == 0 || m.Seq > s.next:
		if len(s.held) < maxHeld {
			s.held[m.Seq] = m
		}
		f.askAgain(now, origin, s, m.Seq-1)
		if s.next == 0 && len(s.held) >= maxHeld {
			f.skipToHeld(now, origin, s)
		}
		return
	case m.Seq < s.next:
		return // applied already (a duplicate, an answer to an ask)
	}
	f.applyNotice(origin, m)
	s.next++
	f.applyHeld(now, origin, s)
}

// newStream starts what this node applies of origin's notices: at next
// if known, else (next 0) once the origin answers an ask for them.
func (f *Forwarder) newStream(origin ids.NodeID, known bool, next uint64) *noticeStream {
	s := &noticeStream{held: map[uint64]*atollpb.FreeObjects{}}
	if known {
		s.next = next
	}
	f.notices[origin] = s
	return s
}

// owedFrom: origin answered an ask for every notice owed; they start at
// first.
func (f *Forwarder) owedFrom(now time.Time, origin ids.NodeID, first uint64) {
	s := f.notices[origin]
	if s == nil || s.next != 0 || origin == f.cfg.Self || f.dead.has(origin) {
		return // not asked, or answered already
	}
	s.next = first
	for seq := range s.held {
		if seq < first {
			delete(s.held, seq) // sent before the origin knew of this node
		}
	}
	f.applyHeld(now, origin, s)
}

// applyHeld applies the held notices that follow the last applied.
func (f *Forwarder) applyHeld(now time.Time, origin ids.NodeID, s *noticeStream) {
	for {
		n := s.held[s.next]
		if n == nil {
			break
		}
		delete(s.held, s.next)
		f.applyNotice(origin, n)
		s.next++
	}
	if len(s.held) >= maxHeld {
		f.skipToHeld(now, origin, s)
	}
}

// skipToHeld: too many notices held behind a gap (or while waiting to
// learn where the stream starts): skip to them rather than hold more.
func (f *Forwarder) skipToHeld(now time.Time, origin ids.NodeID, s *noticeStream) {
	f.log(slog.LevelWarn, "cluster: notices from a node missing, skipped", "node", origin.Short(), "from", s.next)
	s.next = slices.Min(heldSeqs(s))
	f.applyHeld(now, origin, s)
}

func heldSeqs(s *noticeStream) []uint64 {
	out := make([]uint64, 0, len(s.held))
	for k := range s.held {
		out = append(out, k)
	}
	return out
}

// applyNotice carries out one notice: the store frees (or revives) the
// objects and drops what the exited owners owned; the directory of copies
// forgets the freed ones; the owners table forgets the exited owners.
func (f *Forwarder) applyNotice(origin ids.NodeID, m *atollpb.FreeObjects) {
	if m.Missing {
		return
	}
	if len(m.StrayNode) > 0 {
		f.applyStrays(m)
		return
	}
	if len(m.ObjectIds) > 0 {
		f.emit(ToStore{&atollpb.DeleteObjectsRequest{ObjectIds: m.ObjectIds, Revived: m.Revived}})
		if !m.Revived {
			for _, id := range m.ObjectIds {
				delete(f.copies, ids.MustObjectID(id))
			}
		}
	}
	for _, b := range m.ExitedOwners {
		w, err := ids.FromBytes(b)
		if err != nil {
			continue
		}
		// On the owner's own node the raylet reclaimed them already.
		if f.owners.exited(origin, w) && origin != f.cfg.Self {
			f.emit(ToStore{&atollpb.ClientDisconnected{ClientId: w.Bytes()}})
		}
	}
}

// applyStrays carries out a notice of stray copies: their node's store
// deletes them; the directory of copies, on the objects' owners' node,
// forgets that node's.
func (f *Forwarder) applyStrays(m *atollpb.FreeObjects) {
	node, err := ids.FromBytes(m.StrayNode)
	if err != nil {
		return
	}
	if node == f.cfg.Self {
		f.emit(ToStore{&atollpb.DeleteObjectsRequest{ObjectIds: m.ObjectIds, StrayNode: m.StrayNode}})
	}
	for _, b := range m.ObjectIds {
		id, err := ids.ObjectIDFromBytes(b)
		if err != nil {
			continue
		}
		if cs, ok := f.copies[id]; ok {
			if cs = slices.DeleteFunc(cs, func(n ids.NodeID) bool { return n == node }); len(cs) == 0 {
				delete(f.copies, id)
			} else {
				f.copies[id] = cs
			}
		}
	}
}

// askAgain asks origin for its notices up to last that s misses, unless
// they were asked for less than a lease tick ago.
func (f *Forwarder) askAgain(now time.Time, origin ids.NodeID, s *noticeStream, last uint64) {
	if last < s.next || simbugs.On(simbugs.NoticesNotRepaired) { // the second: a bug put in on purpose (simulator tests)
		return
	}
	if last <= s.asked && now.Sub(s.askedAt) < noticeAskEvery {
		return
	}
	s.asked, s.askedAt = last, now
	f.emit(Publish{To: origin, Kind: KindFreeRepair, Msg: &atollpb.FreeRepair{FromNode: f.cfg.Self.Bytes(), First: s.next, Last: last},
		Unsent: UnsentIgnored})
}

// noticesSent: a node's load report says how many notices it sent.
func (f *Forwarder) noticesSent(now time.Time, origin ids.NodeID, seq uint64) {
	if origin == f.cfg.Self || f.dead.has(origin) {
		return
	}
	s := f.notices[origin]
	if s == nil {
		// Heard of before any of its notices: if it sent none, every one
		// is owed; else it says which.
		s = f.newStream(origin, seq == 0, 1)
	}
	f.askAgain(now, origin, s, seq)
}

// heardOf records when this node first heard of node (its join, its
// first load report): the notices owed to node start there.
func (f *Forwarder) heardOf(now time.Time, node ids.NodeID) {
	if node == f.cfg.Self || f.dead.has(node) {
		return
	}
	if _, ok := f.knownSince[node]; !ok {
		f.knownSince[node] = now
	}
}

// firstOwed is the number of the first notice owed to node: the first
// sent at most StrangerGrace before this node heard of it (or before
// now, if it never did) — another node may have given it work of this
// node's owners a gossip round earlier. Notices older than the log are
// lost to it.
func (f *Forwarder) firstOwed(now time.Time, node ids.NodeID) uint64 {
	since, ok := f.knownSince[node]
	if !ok {
		since = now
	}
	since = since.Add(-f.cfg.StrangerGrace)
	oldest := f.freeSeq + 1 - uint64(len(f.freeLog))
	i, _ := slices.BinarySearchFunc(f.freeLog, since, func(n loggedNotice, t time.Time) int { return n.sent.Compare(t) })
	return oldest + uint64(i)
}

// repair sends a node the notices it asks for again.
func (f *Forwarder) repair(now time.Time, m *atollpb.FreeRepair) {
	to, err := ids.FromBytes(m.FromNode)
	if err != nil || m.Last < m.First || m.Last > f.freeSeq || to == f.cfg.Self {
		return
	}
	first := m.First
	if first == 0 {
		// Every notice owed: say where they start, then send them.
		first = f.firstOwed(now, to)
		f.emit(Publish{To: to, Kind: KindFree, Msg: &atollpb.FreeObjects{OriginNode: f.cfg.Self.Bytes(), OwedFrom: first},
			Unsent: UnsentIgnored})
	}
	// At most a log's worth an ask: the asker asks again for the rest.
	last := min(m.Last, first+maxNoticeLog-1)
	oldest := f.freeSeq + 1 - uint64(len(f.freeLog))
	for seq := first; seq <= last; seq++ {
		var n *atollpb.FreeObjects
		if seq >= oldest {
			n = f.freeLog[seq-oldest].msg
		} else {
			n = &atollpb.FreeObjects{OriginNode: f.cfg.Self.Bytes(), Seq: seq, Missing: true}
		}
		f.emit(Publish{To: to, Kind: KindFree, Msg: proto.Clone(n), Unsent: UnsentIgnored})
	}
}

// retryNotices asks again, at a lease tick, for the notices still
// missing.
func (f *Forwarder) retryNotices(now time.Time) {
	for _, origin := range sortedNodes(f.notices) {
		s := f.notices[origin]
		if len(s.held) > 0 {
			f.askAgain(now, origin, s, slices.Min(heldSeqs(s))-1)
		} else if s.asked >= s.next {
			f.askAgain(now, origin, s, s.asked)
		}
	}
}

func sortedNodes[V any](m map[ids.NodeID]V) []ids.NodeID {
	out := make([]ids.NodeID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, compareNodes)
	return out
}
