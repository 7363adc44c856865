package raylet

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Placement-group bundles on this node, after Ray's: the head's placement
// manager reserves a group's bundles by two-phase commit. PrepareBundles
// takes a bundle's resources out of the node's available ones (all the
// bundles of one request, or none); CommitBundles turns them into the
// group's resources, under the names below, which the tasks and actors
// placed in the group demand instead of the plain ones (BundleDemand), so
// that placement finds the node holding the bundle like any resource and
// what runs in a bundle never takes more than it holds; ReleaseBundles
// gives prepared or committed bundles back, killing what runs in them.
//
// A committed bundle i of group P holding {CPU: 2} adds to the node's
// total and available resources
//
//	CPU_group_i_P: 2, CPU_group_P: 2, bundle_group_i_P: 1000, bundle_group_P: 1000
//
// (P the group's id in hex) and takes CPU: 2 from its total. A task in
// bundle i demanding {CPU: 1} demands CPU_group_i_P: 1 and CPU_group_P: 1
// (so that the tasks in "any bundle" of P and those in bundle i share the
// same CPUs), and 0.001 of bundle_group_i_P and bundle_group_P, so that a
// task demanding nothing still needs the bundle's node; in any bundle, only
// the wildcard names.

// BundleResource is the pseudo-resource every bundle holds BundleUnits
// of, and every task in a group demands BundleTaskDemand of.
const (
	BundleResource   = "bundle"
	BundleUnits      = 1000
	BundleTaskDemand = 0.001
	groupInfix       = "_group_"
)

// GroupResource names resource name of bundle index of group pg (the
// wildcard name of the group's bundles with index < 0).
func GroupResource(name string, pg ids.ID16, index int32) string {
	if index < 0 {
		return name + groupInfix + pg.String()
	}
	return fmt.Sprintf("%s%s%d_%s", name, groupInfix, index, pg.String())
}

// IsGroupResource reports whether name is a placement group's resource
// (GroupResource), which only a group's bundles provide.
func IsGroupResource(name string) bool { return strings.Contains(name, groupInfix) }

// GroupsIn returns the placement groups whose resources demand names
// (GroupResource), each once, in no particular order.
func GroupsIn(demand map[string]float64) []ids.ID16 {
	var out []ids.ID16
	for k := range demand {
		i := strings.LastIndex(k, groupInfix)
		if i < 0 {
			continue
		}
		hex := k[i+len(groupInfix):]
		if j := strings.LastIndexByte(hex, '_'); j >= 0 {
			hex = hex[j+1:] // past a bundle's index
		}
		if pg, err := ids.FromHex(hex); err == nil && !slices.Contains(out, pg) {
			out = append(out, pg)
		}
	}
	return out
}

// GroupsWaiting returns the placement groups a node's demands (its load
// report's: work queued or waiting there) name, each once.
func GroupsWaiting(demands []*atollpb.ResourceDemand) []ids.ID16 {
	var out []ids.ID16
	for _, d := range demands {
		for _, pg := range GroupsIn(d.GetResources()) {
			if !slices.Contains(out, pg) {
				out = append(out, pg)
			}
		}
	}
	return out
}

// PlainResources is r without the placement groups' resources: what a node
// offers outside its bundles (nil stays nil).
func PlainResources(r Resources) Resources {
	if r == nil {
		return nil
	}
	out := make(Resources, len(r))
	for k, v := range r {
		if !IsGroupResource(k) {
			out[k] = v
		}
	}
	return out
}

// InGroup reports the group and bundle (-1: any) a strategy places a task
// in.
func InGroup(s *atollpb.SchedulingStrategy) (pg ids.ID16, index int32, ok bool) {
	if s.GetKind() != atollpb.SchedulingStrategy_PLACEMENT_GROUP {
		return ids.ID16{}, 0, false
	}
	id, err := ids.FromBytes(s.GetPlacementGroupId())
	if err != nil || id.IsZero() {
		return ids.ID16{}, 0, false
	}
	return id, max(s.GetBundleIndex(), -1), true
}

// BundleDemand is the demand of a task placed in bundle index of group pg
// (any bundle with index < 0): its resources under the group's names
// (see above).
func BundleDemand(demand Resources, pg ids.ID16, index int32) Resources {
	out := make(Resources, 2*len(demand)+2)
	for k, v := range demand {
		if v <= 0 {
			continue
		}
		out[GroupResource(k, pg, -1)] += v
		if index >= 0 {
			out[GroupResource(k, pg, index)] += v
		}
	}
	out[GroupResource(BundleResource, pg, -1)] = BundleTaskDemand
	if index >= 0 {
		out[GroupResource(BundleResource, pg, index)] = BundleTaskDemand
	}
	return out
}

// bundleKey names one bundle of a group.
type bundleKey struct {
	pg    ids.ID16
	index int32
}

// heldBundle is a bundle this node holds: prepared (its resources taken
// from the available ones) or committed (turned into the group's).
type heldBundle struct {
	resources Resources
	committed bool
}

// groupResources are the resources a committed bundle adds (see above).
func groupResources(k bundleKey, res Resources) Resources {
	out := make(Resources, 2*len(res)+2)
	for name, v := range res {
		if v > 0 && !IsGroupResource(name) {
			out[GroupResource(name, k.pg, -1)] += v
			out[GroupResource(name, k.pg, k.index)] += v
		}
	}
	out[GroupResource(BundleResource, k.pg, -1)] = BundleUnits
	out[GroupResource(BundleResource, k.pg, k.index)] = BundleUnits
	return out
}

// bundleRefs turns the wire form into keys and resources, refusing a
// malformed one.
func bundleRefs(refs []*atollpb.BundleRef) ([]bundleKey, []Resources, error) {
	keys := make([]bundleKey, 0, len(refs))
	res := make([]Resources, 0, len(refs))
	for _, b := range refs {
		id, err := ids.FromBytes(b.GetPlacementGroupId())
		if err != nil || id.IsZero() || b.GetIndex() < 0 {
			return nil, nil, errs.Invalidf("bundle: malformed group id or index")
		}
		r := Resources{}
		for k, v := range b.GetResources() {
			if !(v >= 0) || IsGroupResource(k) {
				return nil, nil, errs.Invalidf("bundle %d of %s: bad resource %s=%g", b.GetIndex(), id.Short(), k, v)
			}
			if v > 0 {
				r[k] = v
			}
		}
		keys = append(keys, bundleKey{pg: id, index: b.GetIndex()})
		res = append(res, r)
	}
	return keys, res, nil
}

// PrepareBundles reserves bundles out of the node's available resources:
// all of them, or none (refused says why). Bundles it holds already are
// left as they are (a repeated request).
func (c *Core) PrepareBundles(now time.Time, refs []*atollpb.BundleRef) (refused string, err error) {
	c.now = now
	keys, res, err := bundleRefs(refs)
	if err != nil {
		return "", err
	}
	if c.draining {
		return "the node is draining", nil
	}
	need := Resources{}
	for i, k := range keys {
		if c.bundles[k] == nil {
			need.Add(res[i])
		}
	}
	if !c.avail.Fits(need) {
		return fmt.Sprintf("node %s has %s available, the bundles need %s", c.cfg.NodeID.Short(), describe(PlainResources(c.avail)), describe(need)), nil
	}
	for i, k := range keys {
		if c.bundles[k] == nil {
			c.bundles[k] = &heldBundle{resources: res[i]}
			c.avail.Sub(res[i])
		}
	}
	return "", nil
}

// CommitBundles turns prepared bundles into their group's resources and
// schedules what waited for them. A bundle neither prepared nor
// committed here refuses the whole request (refused says which); those
// committed already are left as they are.
func (c *Core) CommitBundles(now time.Time, refs []*atollpb.BundleRef) (refused string, err error) {
	c.now = now
	keys, _, err := bundleRefs(refs)
	if err != nil {
		return "", err
	}
	for _, k := range keys {
		if c.bundles[k] == nil {
			return fmt.Sprintf("bundle %d of %s is not prepared on node %s", k.index, k.pg.Short(), c.cfg.NodeID.Short()), nil
		}
	}
	for _, k := range keys {
		b := c.bundles[k]
		if b.committed {
			continue
		}
		b.committed = true
		c.total.Sub(b.resources)
		g := groupResources(k, b.resources)
		c.total.Add(g)
		c.avail.Add(g)
	}
	c.bundlesChanged()
	return "", nil
}

// ReleaseBundles gives bundles back (unknown ones are ignored): a prepared
// bundle's resources become available again; a committed bundle's group
// resources go, and the actors and running tasks that use them are
// killed (reason says why), queued tasks no longer feasible here are
// placed again.
func (c *Core) ReleaseBundles(now time.Time, refs []*atollpb.BundleRef, reason string) error {
	c.now = now
	keys, _, err := bundleRefs(refs)
	if err != nil {
		return err
	}
	var gone []string // suffixes of the group resources that went
	for _, k := range keys {
		b := c.bundles[k]
		if b == nil {
			continue
		}
		delete(c.bundles, k)
		c.avail.Add(b.resources)
		if !b.committed {
			continue
		}
		c.total.Add(b.resources)
		g := groupResources(k, b.resources)
		c.total.Sub(g)
		c.avail.Sub(g)
		gone = append(gone, fmt.Sprintf("%s%d_%s", groupInfix, k.index, k.pg))
		if !c.holdsGroup(k.pg) {
			gone = append(gone, groupInfix+k.pg.String())
		}
	}
	if len(gone) == 0 {
		return nil
	}
	// The group's resources the released bundles gave are gone: names
	// no bundle provides any more leave the tables (what still holds
	// some gives it back into nothing, giveBack).
	for k, v := range c.total {
		if IsGroupResource(k) && v < 1e-9 {
			delete(c.total, k)
			delete(c.avail, k)
		}
	}
	if reason == "" {
		reason = "its placement group's bundle was released"
	}
	uses := func(d Resources) bool {
		for k := range d {
			for _, s := range gone {
				if strings.HasSuffix(k, s) {
					return true
				}
			}
		}
		return false
	}
	var actors []*hostedActor
	for _, a := range c.actors {
		if uses(a.demand) {
			actors = append(actors, a)
		}
	}
	slices.SortFunc(actors, func(x, y *hostedActor) int { return bytes.Compare(x.id[:], y.id[:]) })
	for _, a := range actors {
		c.KillActor(now, &atollpb.KillActor{ActorId: a.id.Bytes(), NoRestart: true, Reason: reason}, true)
	}
	for _, w := range slices.Clone(c.pool) {
		if w.lease != nil && uses(w.lease.demand) && len(w.tasks) > 0 {
			c.stats.WorkersKilled++
			c.emit(KillWorker{Worker: w.id, Reason: reason})
		}
	}
	c.bundlesChanged()
	return nil
}

// holdsGroup reports whether the node holds a committed bundle of pg.
func (c *Core) holdsGroup(pg ids.ID16) bool {
	for k, b := range c.bundles {
		if k.pg == pg && b.committed {
			return true
		}
	}
	return false
}

// PlacementGroupRemoved tells the node a group was removed: its tasks
// waiting or queued here fail (UnschedulableError), and so do those
// submitted later (the node remembers the last maxRemovedGroups).
func (c *Core) PlacementGroupRemoved(now time.Time, pg ids.ID16, reason string) {
	c.now = now
	if !c.removedGroups.add(pg) {
		return
	}
	if reason == "" {
		reason = "removed"
	}
	fail := func(t *task) {
		c.fail(t, &errs.UnschedulableError{TaskName: t.spec.Name, TaskID: t.id.String(),
			Reason: fmt.Sprintf("its placement group %s was %s", pg.Short(), reason)})
	}
	kept := c.waiting[:0]
	for _, w := range c.waiting {
		if g, _, ok := InGroup(w.t.spec.Scheduling); ok && g == pg {
			fail(w.t)
			continue
		}
		kept = append(kept, w)
	}
	clear(c.waiting[len(kept):])
	c.waiting = kept
	for _, cq := range c.sortedClasses() {
		tasks := cq.tasks[:0]
		for _, t := range cq.tasks {
			if g, _, ok := InGroup(t.spec.Scheduling); ok && g == pg {
				c.queued--
				t.queueSpan.End()
				fail(t)
				continue
			}
			tasks = append(tasks, t)
		}
		clear(cq.tasks[len(tasks):])
		cq.tasks = tasks
		if len(cq.tasks) == 0 {
			delete(c.classes, cq.key)
		}
	}
}

// sortedClasses are the classes with queued tasks, oldest first.
func (c *Core) sortedClasses() []*classQueue {
	out := make([]*classQueue, 0, len(c.classes))
	for _, cq := range c.classes {
		if len(cq.tasks) > 0 {
			out = append(out, cq)
		}
	}
	slices.SortFunc(out, func(a, b *classQueue) int { return cmp.Compare(a.tasks[0].seq, b.tasks[0].seq) })
	return out
}

// bundlesChanged follows a change of the node's total resources: queued
// tasks it can no longer run are placed again, tasks waiting for a node
// able to run them are placed again (this one may be it now), then the
// queue is scheduled.
func (c *Core) bundlesChanged() {
	var moved []*task
	for _, cq := range c.sortedClasses() {
		if Feasible(c.total, cq.demand) {
			continue
		}
		for _, t := range cq.tasks {
			t.queueSpan.End()
			moved = append(moved, t)
		}
		c.queued -= len(cq.tasks)
		delete(c.classes, cq.key)
	}
	for _, t := range moved {
		c.place(t, false, t.hops)
	}
	c.placeWaiting()
	c.schedule()
}

// place decides where a task this node holds runs: here (queued), on a
// peer (forwarded), or nowhere yet (waiting).
func (c *Core) place(t *task, forwarded bool, hops int32) {
	if c.cfg.Cluster {
		if c.placeLocally(t, forwarded, hops) && c.enqueue(t) {
			c.schedule()
		}
		return
	}
	if !Feasible(c.total, t.demand) && t.inGroup {
		c.waiting = append(c.waiting, &waitingTask{t: t, forwarded: forwarded, hops: hops})
		return
	}
	if c.enqueue(t) {
		c.schedule()
	}
}

// placeWaiting places the tasks waiting for a node able to run them again.
func (c *Core) placeWaiting() {
	if len(c.waiting) == 0 {
		return
	}
	waiting := c.waiting
	c.waiting = nil
	c.replacing = true // warned about them already
	for _, w := range waiting {
		c.place(w.t, w.forwarded, w.hops)
	}
	c.replacing = false
}

// giveBack returns demand to the available resources, but for the
// group resources no bundle provides any more (the bundle was released
// while a task or actor held them).
func (c *Core) giveBack(demand Resources) {
	for k, v := range demand {
		if _, ok := c.total[k]; ok || !IsGroupResource(k) {
			c.avail[k] += v
		}
	}
}

// Bundles are the bundles the node holds, by group and index.
func (c *Core) Bundles() []*atollpb.BundleHeld {
	out := make([]*atollpb.BundleHeld, 0, len(c.bundles))
	for k, b := range c.bundles {
		out = append(out, &atollpb.BundleHeld{PlacementGroupId: k.pg.Bytes(), Index: k.index, Committed: b.committed})
	}
	slices.SortFunc(out, func(a, b *atollpb.BundleHeld) int {
		if c := bytes.Compare(a.PlacementGroupId, b.PlacementGroupId); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	return out
}

// Demands are the shapes of the work this node holds and cannot start:
// queued (by class) and waiting for a node able to run it (infeasible),
// for the autoscaler.
func (c *Core) Demands() []*atollpb.ResourceDemand {
	type shape struct {
		key        string
		infeasible bool
	}
	counts := map[shape]*atollpb.ResourceDemand{}
	add := func(key string, demand Resources, actors, infeasible bool, n int) {
		s := shape{key, infeasible}
		d := counts[s]
		if d == nil {
			d = &atollpb.ResourceDemand{Resources: maps.Clone(demand), Infeasible: infeasible, Actors: actors}
			counts[s] = d
		}
		d.Count += int32(n)
	}
	for _, cq := range c.classes {
		if len(cq.tasks) > 0 {
			add(cq.key, cq.demand, cq.noSlot, false, len(cq.tasks))
		}
	}
	for _, w := range c.waiting {
		add(ClassKey(w.t.demand, w.t.isActor, false), w.t.demand, w.t.isActor, true, 1)
	}
	out := make([]*atollpb.ResourceDemand, 0, len(counts))
	for _, d := range counts {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *atollpb.ResourceDemand) int {
		if c := cmp.Compare(Resources(a.Resources).String(), Resources(b.Resources).String()); c != 0 {
			return c
		}
		if a.Infeasible != b.Infeasible {
			if a.Infeasible {
				return 1
			}
			return -1
		}
		if a.Actors != b.Actors {
			if a.Actors {
				return 1
			}
			return -1
		}
		return 0
	})
	return out
}

// maxRemovedGroups bounds the removed groups a node remembers.
const maxRemovedGroups = 4096

// groupSet is a bounded set of group ids, oldest forgotten first.
type groupSet struct {
	set   map[ids.ID16]bool
	order []ids.ID16
}

// add adds id; false if it was there.
func (s *groupSet) add(id ids.ID16) bool {
	if s.set[id] {
		return false
	}
	if s.set == nil {
		s.set = map[ids.ID16]bool{}
	}
	s.set[id] = true
	s.order = append(s.order, id)
	if len(s.order) > maxRemovedGroups {
		delete(s.set, s.order[0])
		s.order = s.order[1:]
	}
	return true
}

func (s *groupSet) has(id ids.ID16) bool { return s.set[id] }

// cpuShare is the CPU in demand, under its plain name and its groups':
// what a task blocked in Get lends.
func cpuShare(demand Resources) Resources {
	out := Resources{}
	for k, v := range demand {
		if k == CPU || strings.HasPrefix(k, CPU+groupInfix) {
			out[k] = v
		}
	}
	return out
}
