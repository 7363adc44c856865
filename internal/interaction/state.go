package interaction

import (
	"fmt"
	"sort"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Printing results and state.

// result prints a task result: ok, or its error code; crashed (an actor
// call whose actor crashed); what its process still borrows.
func (e *Env) result(r *atollpb.TaskResult) string {
	s := fmt.Sprintf("%s#%d", e.name(r.TaskId), r.Attempt)
	if r.Error != nil {
		s += " " + r.Error.Code.String()
	} else {
		s += " ok"
		for _, ret := range r.Returns {
			if st := ret.GetValue().GetStored(); st != nil {
				s += fmt.Sprintf(" %s@%s", e.onameBytes(ret.ObjectId), e.name(st.NodeId))
			}
		}
	}
	if r.ActorCrashed {
		s += " crashed"
	}
	if len(r.Borrows) > 0 {
		var b []string
		for _, id := range r.Borrows {
			b = append(b, e.onameBytes(id))
		}
		s += " borrows=[" + strings.Join(b, " ") + "]"
	}
	return s
}

// cmdState: state [party ...]: nodes (raylet, workers, gateway, store),
// hosts, owner processes and the GCS; all of them if none is named.
func (e *Env) cmdState(c Cmd) error {
	want := map[string]bool{}
	for i := 0; c.pos(i) != ""; i++ {
		want[c.pos(i)] = true
	}
	all := len(want) == 0
	for _, n := range e.nodes {
		if all || want[n.name] {
			e.nodeState(n)
		}
	}
	for _, h := range e.sortedHosts() {
		if all || want[h.name] {
			e.hostState(h)
		}
	}
	for _, p := range e.sortedProcs() {
		if (all && p.kind == "driver") || want[p.name] {
			e.procState(p)
		}
	}
	if all || want["gcs"] {
		e.gcsState()
	}
	return nil
}

func (e *Env) nodeState(n *node) {
	status := "up"
	switch {
	case n.crashed:
		status = "crashed"
	case n.left:
		status = "left"
	case e.cut[n]:
		status = "cut off"
	}
	if n.draining {
		status += ", draining"
	}
	st := n.raylet.State()
	e.printf("%s (%s): %d queued, %d running, workers %d (%d idle), cpu %g/%g", n.name, status, st.Queued, st.Running, st.Workers,
		st.IdleWorkers, st.Available["CPU"], st.Total["CPU"])
	for _, w := range sortedWorkers(n) {
		var runs []string
		for _, r := range w.runs {
			s := e.attempt(r.a.Spec())
			switch {
			case r.started:
				s += " running"
			case r.began:
				s += " fetching"
			}
			runs = append(runs, s)
		}
		e.printf("  %s: [%s]", w.name, strings.Join(runs, ", "))
	}
	gs := n.gw.Stats()
	e.printf("  %s: %d sent, %d held for others, %d peers, %d dead", n.gw_(), gs.Pending, gs.Inbound, gs.Peers, gs.DeadNodes)
	for _, h := range e.inventory(n).Objects {
		kind := "primary"
		if h.Copy {
			kind = "copy"
		}
		if !h.Sealed {
			kind += " unsealed"
		}
		owner := "-"
		if len(h.OwnerId) > 0 {
			owner = e.name(h.OwnerId)
		}
		e.printf("  %s: %s %s owner=%s pinned=%v", n.store_(), e.onameBytes(h.ObjectId), kind, owner, h.Pinned)
	}
}

func (e *Env) hostState(h *host) {
	status := "ready"
	switch {
	case h.gone:
		status = "gone"
	case !h.ready:
		status = "restarting"
	}
	var q []string
	if h.running != nil {
		q = append(q, e.attempt(h.running.spec)+" running")
	}
	for _, c := range h.queue {
		q = append(q, e.attempt(c.spec))
	}
	e.printf("%s on %s (%s, restarts %d of %d): [%s]", h.name, h.node.name, status, h.used, h.max, strings.Join(q, ", "))
}

func (e *Env) procState(p *process) {
	var pending []string
	for _, ti := range e.sortedTasks() {
		if ti.owner != p {
			continue
		}
		if st, ok := p.table.TaskState(ti.id); ok {
			pending = append(pending, fmt.Sprintf("%s#%d", ti.name, st.Attempt))
		}
	}
	st := p.table.Stats()
	alive := ""
	if !p.alive {
		alive = " (dead)"
	}
	e.printf("%s%s: pending [%s]; objects %d, stored %s, borrowers %d", p.name, alive, strings.Join(pending, " "), st.Objects,
		e.onameList(p.table.StoredIDs()), st.Borrowers)
}

func (e *Env) sortedTasks() []*taskInfo {
	out := make([]*taskInfo, 0, len(e.tasks))
	for _, ti := range e.tasks {
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
