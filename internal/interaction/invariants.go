package interaction

import (
	"sort"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Checks across parties, after every command (Env.Run fails the command
// when one breaks):
//
//   - at most once: no attempt of a task or call runs twice (on any
//     worker or host); no owner hears two results of one attempt (a
//     message the script duplicated aside, and the late result of an
//     attempt its gateway failed as lost in transit, which may still
//     have run: one more) or sees a task finish twice; no raylet ends an
//     attempt twice;
//   - nothing lost: every attempt an owner still waits for is held by
//     exactly one live raylet, or an actor host, or a gateway that
//     forwarded it (it fails it when its node dies or its lease runs
//     out), or a message in flight carries it or its result;
//   - borrowing: an object a live process borrows from a live owner
//     (HeldFor) is one its owner still has;
//   - no read after free in any store (objectstore.Store.ReadsAfterFree);
//   - at quiescence (no message in flight): every object a live store
//     holds is still referenced by its live owner (no leak); every
//     object a live owner holds in a store is still in its primary's
//     store if that node is up (not freed early) and, if that node left
//     drained, in another live store (a drain loses nothing).

type ledger struct {
	ran     map[attemptKey][]string
	results map[string]int
	// lost: the owner's first result of the attempt was FORWARD_LOST.
	lost     map[string]bool
	finishes map[string]int
	ends     map[*raylet.Assignment]int
	sent     map[attemptKey]bool
	rafSeen  map[*node]uint64
}

func (l *ledger) init() {
	l.ran, l.results, l.finishes, l.lost = map[attemptKey][]string{}, map[string]int{}, map[string]int{}, map[string]bool{}
	l.ends, l.sent, l.rafSeen = map[*raylet.Assignment]int{}, map[attemptKey]bool{}, map[*node]uint64{}
}

// executed records that an attempt started running on where.
func (l *ledger) executed(e *Env, k attemptKey, where string) {
	l.ran[k] = append(l.ran[k], where)
	if len(l.ran[k]) > 1 {
		e.violate("%s ran more than once: on %s", e.attemptKey(k), strings.Join(l.ran[k], ", "))
	}
}

// delivered records a message as it is delivered: results reaching
// owners, work sent by owners.
func (l *ledger) delivered(e *Env, m *message) {
	if m.to.kind != kOwner || m.dup {
		return
	}
	if r, ok := m.body.(*atollpb.TaskResult); ok && r.GeneratorItem == nil {
		k := m.to.name + " " + e.attemptKey(resultKey(r))
		l.results[k]++
		if l.results[k] == 1 && r.GetError().GetCode() == atollpb.ErrorCode_FORWARD_LOST {
			l.lost[k] = true
		}
		allowed := 1
		if l.lost[k] && r.GetError() == nil {
			allowed = 2 // a late result: the attempt ran after all
		}
		if l.results[k] > allowed {
			e.violate("%s received a second result of %s", m.to.name, e.attemptKey(resultKey(r)))
		}
	}
}

func (l *ledger) finished(e *Env, p *process, task string) {
	k := p.name + " " + task
	if l.finishes[k]++; l.finishes[k] > 1 {
		e.violate("%s saw %s finish twice", p.name, task)
	}
}

func (l *ledger) ended(e *Env, a *raylet.Assignment) {
	if l.ends[a]++; l.ends[a] > 1 {
		e.violate("the raylet ended attempt %s (id %d) twice", e.attempt(a.Spec()), a.ID())
	}
}

func (e *Env) checkInvariants() {
	e.checkHeld()
	e.checkBorrows()
	for _, n := range e.nodes {
		if raf := n.store.ReadsAfterFree(); raf > e.ledger.rafSeen[n] {
			e.ledger.rafSeen[n] = raf
			e.violate("%s: %d reads after free", n.store_(), raf)
		}
	}
	if len(e.net) == 0 {
		e.checkStores()
	}
}

// checkHeld: every attempt an owner waits for is held somewhere, by at
// most one raylet.
func (e *Env) checkHeld() {
	names := make([]string, 0, len(e.tasks))
	for n := range e.tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ti := e.tasks[name]
		st, ok := ti.owner.table.TaskState(ti.id)
		if !ti.owner.alive || !ok || !st.Dispatched {
			continue
		}
		k := attemptKey{task: ti.id, attempt: st.Attempt}
		if !e.ledger.sent[k] {
			continue // the owner holds it (a call waiting for its actor)
		}
		var holders, raylets []string
		for _, n := range e.nodes {
			if !n.up() {
				continue
			}
			if a, w, ok := n.raylet.HeldAttempt(ti.id); ok && a == st.Attempt {
				if !w.IsZero() && !e.workerLive(n, w) {
					e.violate("%s holds %s on %s, a worker that is gone and whose exit it heard: a ghost", n.name, e.attemptKey(k), e.name(w.Bytes()))
				}
				raylets = append(raylets, n.name)
			}
			if to := n.gw.SentTo(ti.id, st.Attempt); len(to) > 0 {
				holders = append(holders, n.gw_())
			}
		}
		for _, h := range e.sortedHosts() {
			if !h.gone && h.holds(k) {
				holders = append(holders, h.name)
			}
		}
		for _, m := range e.net {
			for _, c := range m.carries {
				if c == k {
					holders = append(holders, "a message")
				}
			}
		}
		if len(raylets) > 1 {
			e.violate("%s is held by several raylets: %s", e.attemptKey(k), strings.Join(raylets, ", "))
		}
		if len(raylets)+len(holders) == 0 {
			e.violate("%s is pending at %s, but no party holds it and no message carries it or its result: lost", e.attemptKey(k), ti.owner.name)
		}
	}
}

// workerLive reports whether n's worker w lives, or its exit is on its
// way to the raylet (which then reports its attempts).
func (e *Env) workerLive(n *node, w ids.WorkerID) bool {
	if x := n.workers[e.name(w.Bytes())]; x != nil && x.alive {
		return true
	}
	for _, m := range e.net {
		if b, ok := m.body.(*exitedBody); ok && b.worker == w && m.to.node == n {
			return true
		}
	}
	return false
}

func (n *node) gw_() string { return n.name + ".gw" }

// holds reports whether the host has the attempt (queued, held for its
// turn, or running), or is the actor whose creation it is.
func (h *host) holds(k attemptKey) bool {
	if key(h.spec) == k {
		return true
	}
	match := func(c *call) bool { return c != nil && key(c.spec) == k }
	if match(h.running) {
		return true
	}
	for _, c := range h.queue {
		if match(c) {
			return true
		}
	}
	for _, o := range h.callers {
		for _, c := range o.held {
			if match(c) {
				return true
			}
		}
	}
	return false
}

// checkBorrows: what a live process borrows from a live owner, its owner
// still has.
func (e *Env) checkBorrows() {
	procs := e.sortedProcs()
	for _, p := range procs {
		if !p.alive {
			continue
		}
		for _, o := range procs {
			if o == p || !o.alive {
				continue
			}
			for _, id := range p.table.HeldFor(o.id) {
				if _, _, _, ok := o.table.Lookup(id); !ok {
					e.violate("%s borrows %s from %s, which freed it", p.name, e.oname(id), o.name)
				}
			}
		}
	}
}

// checkStores: stores and owners agree, at quiescence.
func (e *Env) checkStores() {
	for _, n := range e.nodes {
		if !n.up() {
			continue
		}
		for _, h := range e.inventory(n).Objects {
			id := ids.MustObjectID(h.ObjectId)
			p := e.procByID(ids.MustFromBytes(h.OwnerId))
			if p == nil || !p.alive {
				continue
			}
			if _, _, _, ok := p.table.Lookup(id); !ok {
				e.violate("leak: %s holds %s, which its owner %s freed", n.store_(), e.oname(id), p.name)
			}
		}
	}
	for _, p := range e.sortedProcs() {
		if !p.alive {
			continue
		}
		for _, id := range p.table.StoredIDs() {
			v, _, _, _ := p.table.Lookup(id)
			if v.GetStored() == nil {
				continue // copies its record does not know of (strays): none to check
			}
			at := e.nodeByID(ids.MustFromBytes(v.GetStored().GetNodeId()))
			if at == nil {
				continue
			}
			held := e.holdings(id)
			switch {
			case at.up() && !hasSealed(held, at):
				e.violate("freed early: %s holds %s on %s, which %s does not have", p.name, e.oname(id), at.name, at.store_())
			case at.left && !hasSealed(held, nil):
				e.violate("lost by a drain: %s holds %s, whose node %s left, and no live store has a copy", p.name, e.oname(id), at.name)
			}
		}
	}
}

// hasSealed reports whether held has a sealed record on n (any node if n
// is nil).
func hasSealed(held []holding, n *node) bool {
	for _, h := range held {
		if h.h.Sealed && (n == nil || h.node == n) {
			return true
		}
	}
	return false
}

// sortBy sorts s by a string key.
func sortBy[T any](s []T, k func(T) string) {
	sort.Slice(s, func(i, j int) bool { return k(s[i]) < k(s[j]) })
}
