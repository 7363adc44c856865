package sim

import (
	"time"
)

// The network. Every message between parties is an event: sent now,
// delivered after a latency drawn from the seed. Messages on one link
// (one sender, one receiver, one path) arrive in the order they were
// sent, as over a socket or a NATS connection; a fault's delay breaks
// that order (the fault plans' delay does too, in the actors' middleware).
//
// Paths, as on a real cluster:
//
//   - local: between the parties of one node (a worker and its raylet,
//     the owner actor of a driver and its raylet, a store and its
//     clients): never cut, never lost; faults may delay or duplicate
//     them.
//   - nats: the control plane between nodes (forwards, results, load
//     reports, frees, the GCS) goes through the NATS server on the head.
//     A node that cannot reach the head buffers what it publishes
//     (nats.go's reconnect buffer) until it can; a message the head
//     cannot pass on to its receiver is lost (NATS is at most once).
//   - direct: node to node (object transfers, gossip): lost across a
//     cut link.
//
// A partition cuts links, one way or both (cut[from][to]); heal restores
// them and flushes the buffers.

type path uint8

const (
	pathLocal path = iota + 1
	pathNATS
	pathDirect
)

func (p path) String() string {
	switch p {
	case pathLocal:
		return "local"
	case pathNATS:
		return "nats"
	case pathDirect:
		return "direct"
	}
	return "?"
}

// msg is one message in flight.
type msg struct {
	from, to *node
	// fromName and toName name the sending and receiving parties.
	fromName, toName string
	path             path
	// kind is the message's type (a protobuf message's name, as fault
	// plans name them) and actor the receiving actor's kind (raylet,
	// gateway, objectstore, owner, worker, actor, gcs).
	kind  string
	actor string
	desc  string
	// size is its payload's bytes (transfers take longer).
	size    int
	deliver func()
	dup     bool
}

func (m *msg) String() string {
	s := m.fromName + "→" + m.toName + " " + m.kind
	if m.desc != "" {
		s += " " + m.desc
	}
	return s
}

type linkKey struct {
	from, to string
	path     path
}

type network struct {
	w *World
	// cut[from][to]: messages from to are lost (the direct link).
	cut map[*node]map[*node]bool
	// last is when each link last delivered: messages keep their order.
	last map[linkKey]time.Time
	// buffered holds what nodes cut off from the head published, in order.
	buffered map[*node][]*msg
	// stats
	sent, delivered, dropped, duplicated, delayed, lost uint64
}

func newNetwork(w *World) *network {
	return &network{w: w, cut: map[*node]map[*node]bool{}, last: map[linkKey]time.Time{}, buffered: map[*node][]*msg{}}
}

// latency of one message on its path.
func (n *network) latency(m *msg) time.Duration {
	r := n.w.rNet
	switch m.path {
	case pathLocal:
		return 20*time.Microsecond + n.w.jitter(r, 200*time.Microsecond)
	case pathDirect:
		// 1 GB/s links.
		return 200*time.Microsecond + n.w.jitter(r, 1500*time.Microsecond) + time.Duration(m.size)*time.Nanosecond
	default:
		return 300*time.Microsecond + n.w.jitter(r, 2*time.Millisecond)
	}
}

// reach reports whether a's direct link to b is up.
func (n *network) reach(a, b *node) bool {
	if a == b {
		return a.up
	}
	return a.up && b.up && !n.cut[a][b]
}

// send queues m for delivery, with the faults the schedule has for it.
func (w *World) send(m *msg) {
	n := w.net
	n.sent++
	if f := w.faults.messageFault(m); f != nil {
		switch f.action {
		case actDrop:
			n.dropped++
			w.log.add("fault drop %s (%s)", m, f.name)
			w.check.faultsHit++
			return
		case actDuplicate:
			n.duplicated++
			w.log.add("fault duplicate %s (%s)", m, f.name)
			w.check.faultsHit++
			d := *m
			d.dup = true
			w.schedule(&d, 0)
		case actDelay:
			n.delayed++
			extra := time.Duration(1 + w.rNet.Int64N(int64(max(f.delay, time.Millisecond))))
			w.log.add("fault delay %s +%v (%s)", m, extra, f.name)
			w.check.faultsHit++
			w.schedule(m, extra)
			return
		}
	}
	w.schedule(m, 0)
}

// schedule delivers m after its latency (plus extra, which breaks the
// link's order).
func (w *World) schedule(m *msg, extra time.Duration) {
	n := w.net
	at := w.now.Add(n.latency(m))
	if extra > 0 {
		at = at.Add(extra)
	} else {
		k := linkKey{from: m.fromName, to: m.toName, path: m.path}
		if last := n.last[k]; at.Before(last) {
			at = last
		}
		n.last[k] = at
	}
	w.at(at, func() { w.arrive(m) })
}

// arrive delivers m, or loses or buffers it across a cut.
func (w *World) arrive(m *msg) {
	n := w.net
	switch m.path {
	case pathNATS:
		head := w.head()
		switch {
		case !m.from.up:
			// Published by a node that died before the server had it.
			n.lost++
			w.log.add("lost %s: %s is down", m, m.from.name)
			return
		case head == nil || !n.reach(m.from, head):
			n.buffered[m.from] = append(n.buffered[m.from], m)
			w.log.add("buffered %s: %s cannot reach the NATS server", m, m.from.name)
			return
		case !m.to.up || !n.reach(head, m.to):
			n.lost++
			w.log.add("lost %s: the NATS server cannot reach %s", m, m.to.name)
			return
		}
	case pathDirect:
		if !n.reach(m.from, m.to) {
			n.lost++
			w.log.add("lost %s: link cut", m)
			return
		}
	case pathLocal:
		if !m.to.up {
			n.lost++
			return
		}
	}
	n.delivered++
	w.log.add("deliver %s", m)
	m.deliver()
}

// flushBuffered re-sends what nodes that reach the head again buffered.
func (w *World) flushBuffered() {
	head := w.head()
	for _, nd := range w.nodes {
		buf := w.net.buffered[nd]
		if len(buf) == 0 || head == nil || !w.net.reach(nd, head) {
			continue
		}
		delete(w.net.buffered, nd)
		w.log.add("flush %d messages %s buffered", len(buf), nd.name)
		for _, m := range buf {
			w.schedule(m, 0)
		}
	}
}

// setCut cuts (or restores) the direct link from a to b.
func (n *network) setCut(a, b *node, cut bool) {
	if a == b {
		return
	}
	if n.cut[a] == nil {
		n.cut[a] = map[*node]bool{}
	}
	if cut {
		n.cut[a][b] = true
	} else {
		delete(n.cut[a], b)
	}
}
