package interaction

import (
	"fmt"
	"strings"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// The network: every message between parties waits in Env.net, oldest
// first, until a command delivers, drops, holds or duplicates it. Across
// a partition, what the cut-off nodes send waits (nats.go's reconnect
// buffer: it is flushed when the partition heals) and what is sent to
// them is lost when it would be delivered (NATS is at most once). A
// message to a party that is gone (a crashed process, a dead or departed
// node) is lost.

// partyKind is the kind of a party; a party is named by its node and name.
type partyKind uint8

const (
	kRaylet partyKind = iota + 1
	kGateway
	kStore
	kOwner  // an owner process's owner actor (a driver, a worker's or actor's process)
	kWorker // a pool worker (its task slot)
	kHost   // an actor host
	kGCS
)

// party is one end of a message.
type party struct {
	kind partyKind
	node *node
	name string
}

// attemptKey names one attempt of a task or call.
type attemptKey struct {
	task    ids.TaskID
	attempt int32
}

// message is one message in flight.
type message struct {
	seq      int
	from, to party
	kind     string
	desc     string
	body     any
	// carries are the attempts it carries (work or results), for the
	// task= selector and the checks.
	carries []attemptKey
	// object is the object a transfer, locate or copy message is about.
	object ids.ObjectID
	held   bool
	dup    bool
}

func (m *message) String() string {
	s := fmt.Sprintf("%s → %s %s", m.from.name, m.to.name, m.kind)
	if m.desc != "" {
		s += " " + m.desc
	}
	return s
}

// send queues a message and prints it, indented, under what caused it.
func (e *Env) send(from, to party, kind, desc string, body any, carries ...attemptKey) {
	e.msgSeq++
	m := &message{seq: e.msgSeq, from: from, to: to, kind: kind, desc: desc, body: body, carries: carries}
	e.net = append(e.net, m)
	e.printf("→ %s", m)
}

// sendObj queues a message about an object (a transfer, a locate, a copy).
func (e *Env) sendObj(from, to party, kind, desc string, body any, id ids.ObjectID) {
	e.send(from, to, kind, desc, body)
	e.net[len(e.net)-1].object = id
}

// crossing reports whether m crosses the partition.
func (e *Env) crossing(m *message) bool {
	return m.from.node != m.to.node && e.cut[m.from.node] != e.cut[m.to.node]
}

// deliverable: not held, and not waiting in a cut-off node's buffer.
func (e *Env) deliverable(m *message) bool {
	return !m.held && !(e.crossing(m) && e.cut[m.from.node])
}

// alive reports whether a party can receive.
func (e *Env) alive(p party) bool {
	switch p.kind {
	case kRaylet, kGateway, kStore:
		return p.node.up()
	case kGCS:
		return e.gcs != nil && e.gcs.node.up()
	case kOwner:
		pr := e.procs[p.name]
		return pr != nil && pr.alive
	case kWorker:
		w := p.node.workers[p.name]
		return w != nil && w.alive
	case kHost:
		h := e.hosts[p.name]
		return h != nil && !h.gone
	}
	return false
}

// deliver hands m to its party and prints what that did.
func (e *Env) deliver(m *message) {
	e.printf("> %s", m)
	e.nested(func() {
		switch {
		case e.crossing(m) && e.cut[m.to.node]:
			e.printf("lost: %s is cut off", m.to.node.name)
			e.lostMessage(m)
			return
		case !e.alive(m.to):
			e.printf("lost: %s is gone", m.to.name)
			e.lostMessage(m)
			return
		}
		e.ledger.delivered(e, m)
		switch m.to.kind {
		case kRaylet:
			e.toRaylet(m)
		case kGateway:
			e.toGateway(m)
		case kStore:
			e.toStore(m)
		case kOwner:
			e.toOwner(m)
		case kWorker:
			e.toWorker(m)
		case kHost:
			e.toHost(m)
		case kGCS:
			e.toGCS(m)
		}
	})
}

// lostMessage lets the sender of a request learn that it failed, as a
// broken connection tells it: pulls of objects (remote transfers are
// request/response over TCP).
func (e *Env) lostMessage(m *message) {
	e.servedLost(m)
	if m.kind == "pull" && m.from.node.up() {
		e.pullFailed(m.from.node, m.body.(*pullReq).id, m.to.node, "no connection to "+m.to.node.name)
	}
}

// take removes m from the network.
func (e *Env) take(m *message) {
	for i, x := range e.net {
		if x == m {
			e.net = append(e.net[:i], e.net[i+1:]...)
			return
		}
	}
}

// stabilize delivers messages, oldest first, until none can be delivered.
func (e *Env) stabilize() {
	for i := 0; ; i++ {
		if i > 10000 {
			e.violate("stabilize: no fixed point after 10000 messages")
			return
		}
		var next *message
		for _, m := range e.net {
			if e.deliverable(m) {
				next = m
				break
			}
		}
		if next == nil {
			break
		}
		e.take(next)
		e.deliver(next)
	}
	if n := len(e.net); n > 0 {
		e.printf("(%d messages held)", n)
	}
}

// selector picks messages: from=, to= (a party), node= (the destination's
// node), kind=, task= (it carries an attempt of that task), object= (a
// transfer, locate or copy of that object); n= bounds how many.
type selector struct {
	from, to, node, kind string
	task                 *ids.TaskID
	object               *ids.ObjectID
	n                    int
}

func (e *Env) selector(c Cmd) (selector, error) {
	s := selector{from: c.val("from", ""), to: c.val("to", ""), node: c.val("node", ""), kind: c.val("kind", "")}
	if t := c.val("task", ""); t != "" {
		id := ids.TaskID(e.id(t))
		s.task = &id
	}
	if o := c.val("object", ""); o != "" {
		id := e.object(o)
		s.object = &id
	}
	var err error
	s.n, err = c.int("n", 0)
	return s, err
}

func (s selector) match(m *message) bool {
	if (s.from != "" && m.from.name != s.from) || (s.to != "" && m.to.name != s.to) ||
		(s.node != "" && m.to.node.name != s.node) || (s.kind != "" && m.kind != s.kind) ||
		(s.object != nil && m.object != *s.object) {
		return false
	}
	if s.task != nil {
		for _, k := range m.carries {
			if k.task == *s.task {
				return true
			}
		}
		return false
	}
	return true
}

// cmdNet: deliver | drop | hold | release-held | duplicate, with a
// selector (every message if none).
func (e *Env) cmdNet(c Cmd) error {
	s, err := e.selector(c)
	if err != nil {
		return err
	}
	var picked []*message
	for _, m := range e.net {
		if s.match(m) && (c.Name != "deliver" || e.deliverable(m)) && (c.Name != "release-held" || m.held) {
			picked = append(picked, m)
			if s.n > 0 && len(picked) == s.n {
				break
			}
		}
	}
	if len(picked) == 0 {
		e.printf("no messages")
		return nil
	}
	for _, m := range picked {
		switch c.Name {
		case "deliver":
			e.take(m)
			e.deliver(m)
		case "drop":
			e.take(m)
			e.printf("dropped: %s", m)
		case "hold":
			m.held = true
			e.printf("held: %s", m)
		case "release-held":
			m.held = false
			e.printf("released: %s", m)
		case "duplicate":
			e.msgSeq++
			d := *m
			d.seq, d.dup = e.msgSeq, true
			e.net = append(e.net, &d)
			e.printf("duplicated: %s", m)
		}
	}
	return nil
}

// printNet lists the messages in flight.
func (e *Env) printNet() {
	if len(e.net) == 0 {
		e.printf("no messages")
		return
	}
	for _, m := range e.net {
		var notes []string
		if m.held {
			notes = append(notes, "held")
		}
		if e.crossing(m) && e.cut[m.from.node] {
			notes = append(notes, "buffered: "+m.from.node.name+" is cut off")
		}
		if m.dup {
			notes = append(notes, "duplicate")
		}
		if len(notes) > 0 {
			e.printf("%s (%s)", m, strings.Join(notes, ", "))
		} else {
			e.printf("%s", m)
		}
	}
}

// cmdPartition cuts the named nodes off from the others (the head, which
// serves the control plane, cannot be cut off).
func (e *Env) cmdPartition(c Cmd) error {
	var names []string
	for i := 0; c.pos(i) != ""; i++ {
		names = append(names, c.pos(i))
	}
	for _, name := range names {
		n := e.byNode[name]
		if n == nil {
			return fmt.Errorf("partition: no node %s", name)
		}
		if n.head {
			return fmt.Errorf("partition: %s is the head", name)
		}
		e.cut[n] = true
	}
	e.printf("cut off: [%s]", strings.Join(names, " "))
	return nil
}

// heal ends the partition: the cut-off nodes' buffered messages become
// deliverable.
func (e *Env) heal() {
	var names []string
	for _, n := range e.nodes {
		if e.cut[n] {
			names = append(names, n.name)
		}
	}
	clear(e.cut)
	e.printf("healed: [%s]", strings.Join(names, " "))
}
