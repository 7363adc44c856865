package autoscaler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The autoscaler's decision: a pure function of a Policy and a Snapshot
// (Decide). It reads no clock (Snapshot.Now is the time), keeps no state
// between rounds (the shell keeps the instances and the nodes' idle
// times) and does no I/O.

// NodeType is one kind of node the provider can launch.
type NodeType struct {
	Name string
	// Resources are what a node of the type offers (CPU, memory, custom).
	Resources raylet.Resources
	// Min and Max bound the type's workers (launching and running).
	Min, Max int
}

// Policy is what Decide decides with (Config's scaling settings).
type Policy struct {
	Types []NodeType
	// MaxWorkers bounds the worker nodes of every type together (0: the
	// sum of the types' Max).
	MaxWorkers int
	// UpscalingSpeed bounds the nodes launching at once to
	// max(MinLaunching, ceil(UpscalingSpeed × the workers alive)) (Ray's
	// upscaling_speed).
	UpscalingSpeed float64
	MinLaunching   int
	// IdleTimeout is how long a worker must have been idle before it is
	// drained and removed (Ray's idle_timeout_minutes).
	IdleTimeout time.Duration
	// LaunchTimeout is how long a launched instance may take to join
	// before it counts as failed (and is terminated).
	LaunchTimeout time.Duration
}

// InstanceState is where an instance the provider launched is.
type InstanceState int

// The states of an instance.
const (
	// Launching: launched, its node has not joined yet.
	Launching InstanceState = iota + 1
	// Running: its node joined and runs.
	Running
	// Draining: its node is being drained (it takes no new work; its
	// objects are being moved), then it leaves.
	Draining
	// Terminating: being stopped by the provider.
	Terminating
)

func (s InstanceState) String() string {
	switch s {
	case Launching:
		return "launching"
	case Running:
		return "running"
	case Draining:
		return "draining"
	case Terminating:
		return "terminating"
	}
	return fmt.Sprintf("InstanceState(%d)", int(s))
}

// Instance is a node the provider launched.
type Instance struct {
	ID    string
	Type  string
	State InstanceState
	// NodeID is its node's id (hex) once it joined.
	NodeID string
	// Since is when it entered State.
	Since time.Time
}

// Node is a live node of the cluster as the round sees it.
type Node struct {
	ID       string // hex
	Type     string // its node type ("" for one started by hand)
	Instance string // the instance it runs on ("" for one the provider did not launch)
	Head     bool
	// Total and Available are its plain resources; what placement-group
	// bundles reserve counts as in use.
	Total, Available raylet.Resources
	// Busy: it runs or queues work, hosts actors, holds bundles or
	// pinned objects (Why says which), or uses resources; IdleSince is
	// when it last was.
	Busy      bool
	Why       string
	IdleSince time.Time
	Draining  bool
}

// Demand is a shape of work the nodes did not start: Count tasks (or
// actors) of Resources each.
type Demand struct {
	Resources raylet.Resources
	Count     int
	Actors    bool
}

// GroupDemand is a placement group not fully placed: the bundles it still
// needs, its strategy, and the nodes holding its other bundles.
type GroupDemand struct {
	ID       string
	Strategy atollpb.PlacementStrategy
	Bundles  []raylet.Resources
	Placed   []string
}

// Snapshot is the cluster at Now, as a round sees it.
type Snapshot struct {
	Now       time.Time
	Nodes     []Node
	Instances []Instance
	Demands   []Demand
	Groups    []GroupDemand
	// Requests are the bundles of request_resources: room the cluster
	// should have at once, whatever runs.
	Requests []raylet.Resources
}

// Decision is a round's outcome: what to launch, drain and terminate,
// and the demand left unmet (with why).
type Decision struct {
	Launches     []Launch
	Drains       []Drain
	Terminations []Termination
	Unmet        []Unmet
}

// Launch starts Count instances of Type.
type Launch struct {
	Type   string
	Count  int
	Reason string
}

// Drain drains Instance's node (it takes no new work, its objects are
// copied elsewhere), after which it leaves and is terminated.
type Drain struct {
	Instance, NodeID, Reason string
}

// Termination stops Instance.
type Termination struct {
	Instance, Reason string
}

// Unmet is demand the nodes (those launching included) cannot hold:
// Infeasible when no node type could (it is never scaled for).
type Unmet struct {
	Source     string
	Resources  raylet.Resources
	Count      int
	Infeasible bool
	Reason     string
}

// bin is a node's room in a round's packing: a live node, one launching,
// or one the round plans to launch.
type bin struct {
	node    string // node id, or "" for one launching or planned
	typ     string
	avail   raylet.Resources
	total   raylet.Resources
	groups  map[string]bool // strict-spread groups with a bundle here
	planned bool
}

// item is one unit of demand to place: a task's or actor's shape, or a
// bundle (of group, for its strategy).
type item struct {
	source string
	res    raylet.Resources
	group  string
	strict bool // STRICT_SPREAD: not with another bundle of its group
}

// Decide is the autoscaler's round: instances that failed to join or
// whose node left are terminated; every type gets its Min workers; the
// demand (request_resources, then placement groups, then tasks and
// actors) is packed onto the nodes' room (live and launching), and what
// does not fit gets new nodes of the type that fits it with the least
// room to spare, within the types' Max, MaxWorkers and the upscaling
// speed; demand no type can hold is infeasible and never scaled for;
// workers idle past IdleTimeout, above their type's Min and not needed to
// hold the requests, are drained (the longest idle first), never in a
// round that launches their type nor when the round's demand was packed
// on them (a group about to be placed there, say). The result depends on its arguments
// only.
func Decide(p Policy, s Snapshot) Decision {
	var d Decision
	types := map[string]NodeType{}
	for _, t := range p.Types {
		types[t.Name] = t
	}
	alive := map[string]*Node{}
	for i := range s.Nodes {
		alive[s.Nodes[i].ID] = &s.Nodes[i]
	}

	// 1. Instances gone wrong, and what the live ones count.
	count := map[string]int{} // launching and running, by type
	workers, launching := 0, 0
	instances := slices.Clone(s.Instances)
	slices.SortFunc(instances, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	for _, in := range instances {
		switch in.State {
		case Terminating:
			continue
		case Launching:
			if p.LaunchTimeout > 0 && s.Now.Sub(in.Since) > p.LaunchTimeout {
				d.Terminations = append(d.Terminations, Termination{Instance: in.ID,
					Reason: fmt.Sprintf("its node did not join within %v of its launch", p.LaunchTimeout)})
				continue
			}
			launching++
		case Running, Draining:
			if alive[in.NodeID] == nil {
				why := "its node left the cluster"
				if in.State == Running {
					why = "its node is no longer in the cluster (it died or was stopped)"
				}
				d.Terminations = append(d.Terminations, Termination{Instance: in.ID, Reason: why})
				continue
			}
			if in.State == Draining {
				continue // on its way out: neither room nor a count
			}
		}
		count[in.Type]++
		workers++
	}
	maxWorkers := p.MaxWorkers
	if maxWorkers <= 0 {
		for _, t := range p.Types {
			maxWorkers += t.Max
		}
	}

	// 2. The room: live nodes that take work, and instances launching.
	var bins []*bin
	for _, n := range sortedNodes(s.Nodes) {
		if n.Draining {
			continue
		}
		bins = append(bins, &bin{node: n.ID, typ: n.Type, avail: n.Available.Clone(), total: n.Total.Clone()})
	}
	for _, in := range instances {
		if in.State == Launching && !(p.LaunchTimeout > 0 && s.Now.Sub(in.Since) > p.LaunchTimeout) {
			if t, ok := types[in.Type]; ok {
				bins = append(bins, &bin{typ: in.Type, avail: t.Resources.Clone(), total: t.Resources.Clone()})
			}
		}
	}

	planned := map[string]int{}
	reasons := map[string][]string{}
	plan := func(t NodeType, why string) *bin {
		planned[t.Name]++
		if !slices.Contains(reasons[t.Name], why) {
			reasons[t.Name] = append(reasons[t.Name], why)
		}
		b := &bin{typ: t.Name, avail: t.Resources.Clone(), total: t.Resources.Clone(), planned: true}
		bins = append(bins, b)
		return b
	}
	used := map[string]bool{} // live nodes the round's demand was packed on
	room := func(t NodeType) bool {
		return count[t.Name]+planned[t.Name] < t.Max && workers+total(planned) < maxWorkers
	}

	// 3. Every type's minimum.
	for _, t := range sortedTypes(p.Types) {
		for count[t.Name]+planned[t.Name] < t.Min && workers+total(planned) < maxWorkers {
			plan(t, "min_workers")
		}
	}

	// 4. request_resources: against the nodes' totals, all at once.
	var reqs []item
	for _, r := range s.Requests {
		reqs = append(reqs, item{source: "request_resources", res: plainOf(r)})
	}
	d.Unmet = append(d.Unmet, place(reqs, bins, func(b *bin) raylet.Resources { return b.total }, p, types, room, plan, "request_resources", nil)...)

	// 5. Placement groups, oldest first, then tasks and actors.
	var work []item
	for _, g := range s.Groups {
		src := "placement group " + g.ID
		switch g.Strategy {
		case atollpb.PlacementStrategy_STRICT_PACK:
			sum := raylet.Resources{}
			for _, b := range g.Bundles {
				sum.Add(plainOf(b))
			}
			work = append(work, item{source: src, res: sum, group: g.ID})
		default:
			for _, b := range g.Bundles {
				work = append(work, item{source: src, res: plainOf(b), group: g.ID, strict: g.Strategy == atollpb.PlacementStrategy_STRICT_SPREAD})
			}
			if g.Strategy == atollpb.PlacementStrategy_STRICT_SPREAD {
				for _, n := range g.Placed {
					for _, b := range bins {
						if b.node == n {
							b.spreads(g.ID)
						}
					}
				}
			}
		}
	}
	for _, dm := range sortedDemands(s.Demands) {
		res := plainOf(dm.Resources)
		if len(res) == 0 && groupShape(dm.Resources) {
			continue // waits for its placement group's bundle: the group's demand counts
		}
		src := "tasks"
		if dm.Actors {
			src = "actors"
		}
		for range dm.Count {
			work = append(work, item{source: src, res: res})
		}
	}
	d.Unmet = append(d.Unmet, place(work, bins, func(b *bin) raylet.Resources { return b.avail }, p, types, room, plan, "", used)...)

	// 6. The upscaling speed.
	allowed := max(p.MinLaunching, int(math.Ceil(p.UpscalingSpeed*float64(max(workers-launching, 0))))) - launching
	for _, t := range sortedTypes(p.Types) {
		n := min(planned[t.Name], max(allowed, 0))
		if n < planned[t.Name] {
			reasons[t.Name] = append(reasons[t.Name], fmt.Sprintf("%d more wait for the upscaling speed (%d launching at once)", planned[t.Name]-n, max(p.MinLaunching, allowed+launching)))
		}
		allowed -= n
		if n > 0 {
			d.Launches = append(d.Launches, Launch{Type: t.Name, Count: n, Reason: strings.Join(reasons[t.Name], "; ")})
		}
	}

	// 7. Idle workers, longest idle first.
	launched := map[string]bool{}
	for _, l := range d.Launches {
		launched[l.Type] = true
	}
	var idle []Instance
	for _, in := range instances {
		n := alive[in.NodeID]
		if in.State == Running && n != nil && !n.Busy && !n.Draining && p.IdleTimeout > 0 && s.Now.Sub(n.IdleSince) >= p.IdleTimeout {
			idle = append(idle, in)
		}
	}
	slices.SortFunc(idle, func(a, b Instance) int {
		return cmp.Or(alive[a.NodeID].IdleSince.Compare(alive[b.NodeID].IdleSince), strings.Compare(a.ID, b.ID))
	})
	kept := map[string]bool{}
	for _, in := range idle {
		t, known := types[in.Type]
		switch {
		case launched[in.Type], used[in.NodeID]:
			continue // its type is short, or waiting work was counted on it
		case known && count[in.Type] <= t.Min:
			continue
		case !requestsFit(s.Requests, s.Nodes, in.NodeID, kept):
			continue
		}
		kept[in.NodeID] = true // removed: the next candidates' checks leave it out
		count[in.Type]--
		d.Drains = append(d.Drains, Drain{Instance: in.ID, NodeID: in.NodeID,
			Reason: fmt.Sprintf("idle for %v (idle timeout %v)", s.Now.Sub(alive[in.NodeID].IdleSince).Round(time.Second), p.IdleTimeout)})
	}
	return d
}

// spreads records that a bundle of strict-spread group g is on b.
func (b *bin) spreads(g string) {
	if b.groups == nil {
		b.groups = map[string]bool{}
	}
	b.groups[g] = true
}

// place packs items onto the bins' room (what room returns, taken from),
// largest first, first fit; what does not fit goes to new nodes (plan),
// and what no type can hold is reported unmet.
func place(items []item, bins []*bin, room func(*bin) raylet.Resources, p Policy, types map[string]NodeType,
	canLaunch func(NodeType) bool, plan func(NodeType, string) *bin, only string, used map[string]bool) []Unmet {
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(size(b.res), size(a.res)) })
	unmet := map[string]*Unmet{}
	var order []string
	miss := func(it item, infeasible bool, why string) {
		k := fmt.Sprintf("%s|%v|%s", it.source, infeasible, raylet.Resources(it.res).String())
		u := unmet[k]
		if u == nil {
			u = &Unmet{Source: it.source, Resources: it.res, Infeasible: infeasible, Reason: why}
			unmet[k] = u
			order = append(order, k)
		}
		u.Count++
	}
	fits := func(b *bin, it item) bool {
		return room(b).Fits(it.res) && !(it.strict && b.groups[it.group])
	}
	for _, it := range items {
		var target *bin
		for _, b := range bins {
			if fits(b, it) {
				target = b
				break
			}
		}
		if target == nil {
			t, ok, why := chooseType(p, types, it, canLaunch)
			if !ok {
				miss(it, why.infeasible, why.text)
				continue
			}
			why2 := it.source
			if only != "" {
				why2 = only
			}
			target = plan(t, fmt.Sprintf("%s need %s", why2, raylet.Resources(it.res).String()))
			bins = append(bins, target) // room for the items after it too
		}
		room(target).Sub(it.res)
		if target.node != "" && used != nil {
			used[target.node] = true
		}
		if it.strict {
			target.spreads(it.group)
		}
	}
	out := make([]Unmet, 0, len(order))
	for _, k := range order {
		out = append(out, *unmet[k])
	}
	return out
}

type whyNot struct {
	infeasible bool
	text       string
}

// chooseType picks the node type for an item that fits no node: among the
// types whose resources hold it, the one left with the least room (by
// fraction of each resource), ties by name; ok false says why none.
func chooseType(p Policy, types map[string]NodeType, it item, canLaunch func(NodeType) bool) (NodeType, bool, whyNot) {
	var best NodeType
	bestWaste, some, full := math.Inf(1), false, []string(nil)
	for _, t := range sortedTypes(p.Types) {
		if !t.Resources.Fits(it.res) {
			continue
		}
		some = true
		if !canLaunch(t) {
			full = append(full, t.Name)
			continue
		}
		if w := waste(t.Resources, it.res); w < bestWaste {
			best, bestWaste = t, w
		}
	}
	switch {
	case bestWaste < math.Inf(1):
		return best, true, whyNot{}
	case !some:
		return NodeType{}, false, whyNot{infeasible: true, text: fmt.Sprintf("no node type has %s", raylet.Resources(it.res).String())}
	}
	return NodeType{}, false, whyNot{text: fmt.Sprintf("node types %s at max_workers (or the cluster at its max_workers)", strings.Join(full, ", "))}
}

// waste is the room a type would have left after it, as a sum of
// fractions of its resources.
func waste(res, it raylet.Resources) float64 {
	var w float64
	for k, v := range res {
		if v > 0 {
			w += (v - it[k]) / v
		}
	}
	return w
}

// requestsFit reports whether the requests fit the totals of the nodes
// but gone and those already removed.
func requestsFit(reqs []raylet.Resources, nodes []Node, gone string, removed map[string]bool) bool {
	if len(reqs) == 0 {
		return true
	}
	var rooms []raylet.Resources
	for _, n := range sortedNodes(nodes) {
		if n.ID != gone && !removed[n.ID] && !n.Draining {
			rooms = append(rooms, n.Total.Clone())
		}
	}
	sorted := slices.Clone(reqs)
	slices.SortStableFunc(sorted, func(a, b raylet.Resources) int { return cmp.Compare(size(b), size(a)) })
	for _, r := range sorted {
		r = plainOf(r)
		i := slices.IndexFunc(rooms, func(room raylet.Resources) bool { return room.Fits(r) })
		if i < 0 {
			return false
		}
		rooms[i].Sub(r)
	}
	return true
}

// plainOf is a demand's plain resources (a placement group's own left
// out: a bundle provides them).
func plainOf(r raylet.Resources) raylet.Resources {
	out := raylet.Resources{}
	for k, v := range r {
		if v > 0 && !raylet.IsGroupResource(k) {
			out[k] = v
		}
	}
	return out
}

// groupShape reports whether a demand names a placement group's
// resources.
func groupShape(r raylet.Resources) bool {
	for k := range r {
		if raylet.IsGroupResource(k) {
			return true
		}
	}
	return false
}

// size orders demands: the sum of the amounts, memory in GiB.
func size(r raylet.Resources) float64 {
	var s float64
	for k, v := range r {
		if strings.Contains(strings.ToLower(k), "memory") {
			v /= 1 << 30
		}
		s += max(v, 0)
	}
	return s
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedNodes(nodes []Node) []Node {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func sortedTypes(ts []NodeType) []NodeType {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b NodeType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func sortedDemands(ds []Demand) []Demand {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Demand) int {
		return cmp.Or(cmp.Compare(size(b.Resources), size(a.Resources)), strings.Compare(raylet.Resources(a.Resources).String(), raylet.Resources(b.Resources).String()))
	})
	return out
}
