package interaction

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
)

// The store party: a node's objectstore.Store, and its transfers. The
// fetcher that pulls objects between nodes (internal/cluster/fetch.go) is
// not a pure core; this models its rules as messages: a pull reserves the
// copy in the destination's store (created unsealed, marked a copy, so
// the AMM sees it being pulled), asks the primary's node first, and, if
// that node is gone or the transfer fails, asks the owner's node which
// nodes hold copies (its gateway's directory, Forwarder.Copies) and pulls
// from those; the source pins the object while it serves it, until the
// bytes arrive (a transfer whose source dies before is broken); a sealed
// copy is announced to the owner's node (ObjectCopies), whose directory
// lists it from then on.

// objRef is what a pull needs to know of an object.
type objRef struct {
	id        ids.ObjectID
	size      uint64
	codec     atollpb.Codec
	owner     ids.WorkerID
	ownerNode ids.NodeID
	primary   ids.NodeID
}

// pull is a transfer into a node's store under way.
type pull struct {
	ref        objRef
	candidates []*node
	round      int
	tried      map[*node]bool
	waiters    []*worker
}

// Message bodies to a store.
type (
	pullReq struct {
		id ids.ObjectID
		to *node
	}
	pullData struct {
		id   ids.ObjectID
		size uint64
	}
	pullFailedBody struct {
		id  ids.ObjectID
		why string
	}
	locatedBody struct {
		id    ids.ObjectID
		nodes []ids.NodeID
	}
)

func nodeFromHex(s string) ids.NodeID {
	b, err := hex.DecodeString(s)
	if err != nil {
		return ids.NodeID{}
	}
	id, _ := ids.FromBytes(b)
	return id
}

// startPull makes dest's store pull ref; waiter, if any, is told when it
// is there (or lost).
func (e *Env) startPull(dest *node, ref objRef, waiter *worker) {
	if p := dest.pulls[ref.id]; p != nil {
		if waiter != nil {
			p.waiters = append(p.waiters, waiter)
		}
		return
	}
	req := objectstore.CreateRequest{ID: ref.id, Size: ref.size, Codec: ref.codec, Client: dest.xfer(), Owner: ref.owner, Copy: true}
	if _, _, err := dest.store.Create(req, e.now); err != nil {
		if errors.Is(err, objectstore.ErrObjectExists) && waiter != nil {
			e.argReady(waiter, ref.id)
			return
		}
		e.printf("%s: cannot reserve %s: %v", dest.store_(), e.oname(ref.id), err)
		if waiter != nil {
			e.argFailed(waiter, ref.id, err.Error())
		}
		return
	}
	p := &pull{ref: ref, tried: map[*node]bool{}}
	if n := e.nodeByID(ref.primary); n != nil {
		p.candidates = []*node{n}
	}
	if waiter != nil {
		p.waiters = append(p.waiters, waiter)
	}
	dest.pulls[ref.id] = p
	e.tryPull(dest, p)
}

// tryPull asks the next candidate; past the primary it asks the owner's
// node for the copies, and past those the pull fails.
func (e *Env) tryPull(dest *node, p *pull) {
	id := p.ref.id
	for _, c := range p.candidates {
		if p.tried[c] || c == dest {
			continue
		}
		p.tried[c] = true
		if dest.lost[c] {
			e.printf("%s: %s is not in the cluster: not asked for %s", dest.store_(), c.name, e.oname(id))
			continue
		}
		e.sendObj(dest.storeParty(), c.storeParty(), "pull", e.oname(id), &pullReq{id: id, to: dest}, id)
		return
	}
	if p.round == 0 {
		if owner := e.nodeByID(p.ref.ownerNode); owner != nil {
			p.round++
			e.sendObj(dest.storeParty(), owner.gwParty(), "locate", e.oname(id), &locateReq{id: id, from: dest}, id)
			return
		}
	}
	delete(dest.pulls, id)
	if err := dest.store.Abort(id, dest.xfer(), e.now); err != nil {
		e.violate("%s: abort of %s: %v", dest.store_(), e.oname(id), err)
	}
	e.printf("%s: pull of %s failed: no node holds it", dest.store_(), e.oname(id))
	for _, w := range p.waiters {
		e.argFailed(w, id, "no node holds it")
	}
}

// pullFailed: the transfer from source failed; try the next candidate.
func (e *Env) pullFailed(dest *node, id ids.ObjectID, source *node, why string) {
	p := dest.pulls[id]
	if p == nil {
		return
	}
	e.printf("%s: pull of %s from %s failed: %s", dest.store_(), e.oname(id), source.name, why)
	e.tryPull(dest, p)
}

// toStore applies a message to a store.
func (e *Env) toStore(m *message) {
	n := m.to.node
	switch b := m.body.(type) {
	case *pullReq:
		res := n.store.Get([]ids.ObjectID{b.id}, n.xfer(), e.now)
		if len(res.Missing) > 0 {
			e.sendObj(n.storeParty(), b.to.storeParty(), "pull-failed", e.oname(b.id)+" not here", &pullFailedBody{id: b.id, why: "not in " + n.store_()}, b.id)
			return
		}
		e.sendObj(n.storeParty(), b.to.storeParty(), "pull-data", e.oname(b.id)+" (pinned while it travels)", &pullData{id: b.id, size: res.Locations[0].Length}, b.id)
	case *pullData:
		source := m.from.node
		if !source.up() {
			e.pullFailed(n, b.id, source, "the transfer broke: "+source.name+" is gone")
			return
		}
		if err := source.store.Release([]ids.ObjectID{b.id}, source.xfer(), e.now); err != nil {
			e.violate("%s: release of a served pin: %v", source.store_(), err)
		}
		p := n.pulls[b.id]
		if p == nil {
			return
		}
		delete(n.pulls, b.id)
		if err := n.store.Seal(b.id, n.xfer(), e.now); err != nil {
			e.violate("%s: seal of %s: %v", n.store_(), e.oname(b.id), err)
			return
		}
		e.printf("%s: sealed a copy of %s from %s", n.store_(), e.oname(b.id), source.name)
		if owner := e.nodeByID(p.ref.ownerNode); owner != nil {
			e.sendObj(n.storeParty(), owner.gwParty(), "copy", fmt.Sprintf("%s on [%s]", e.oname(b.id), n.name),
				&atollpb.ObjectCopies{ObjectId: b.id.Bytes(), NodeIds: [][]byte{n.id.Bytes()}}, b.id)
		}
		for _, w := range p.waiters {
			e.argReady(w, b.id)
		}
	case *pullFailedBody:
		e.pullFailed(n, b.id, m.from.node, b.why)
	case *locatedBody:
		p := n.pulls[b.id]
		if p == nil {
			return
		}
		p.candidates = nil
		for _, id := range b.nodes {
			if c := e.nodeByID(id); c != nil {
				p.candidates = append(p.candidates, c)
			}
		}
		e.tryPull(n, p)
	default:
		panic(fmt.Sprintf("interaction: store message %T", m.body))
	}
}

// servedLost: a transfer's bytes did not arrive (the reader is gone):
// the source stops serving (its pin goes).
func (e *Env) servedLost(m *message) {
	if b, ok := m.body.(*pullData); ok && m.from.node.up() {
		if err := m.from.node.store.Release([]ids.ObjectID{b.id}, m.from.node.xfer(), e.now); err != nil {
			e.violate("%s: release of a served pin: %v", m.from.node.store_(), err)
		}
	}
}

// holding is one store's record of an object, from its inventory.
type holding struct {
	node *node
	h    *atollpb.ObjectHolding
}

// holdings lists the live stores' records of id, in node order.
func (e *Env) holdings(id ids.ObjectID) []holding {
	var out []holding
	for _, n := range e.nodes {
		if !n.up() {
			continue
		}
		for _, h := range e.inventory(n).Objects {
			if ids.MustObjectID(h.ObjectId) == id {
				out = append(out, holding{node: n, h: h})
			}
		}
	}
	return out
}

// holdingsOn is n's record of id, if it has one.
func (e *Env) holdingsOn(n *node, id ids.ObjectID) []*atollpb.ObjectHolding {
	var out []*atollpb.ObjectHolding
	for _, h := range e.inventory(n).Objects {
		if ids.MustObjectID(h.ObjectId) == id {
			out = append(out, h)
		}
	}
	return out
}

// inventory is everything a store holds (deleted objects left out).
func (e *Env) inventory(n *node) *atollpb.ObjectList {
	return n.store.Inventory(e.now, 0, 1<<20)
}
