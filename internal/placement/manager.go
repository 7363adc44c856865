package placement

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Config are the Manager's knobs; zero fields take the defaults.
type Config struct {
	// OpTimeout bounds a node's answer to a step of the two-phase
	// commit: past it the step counts as refused (prepared bundles are
	// released, the group tried again). Default DefaultOpTimeout.
	OpTimeout time.Duration
	// RetryInterval is how often pending groups are tried again when
	// nothing changed in the cluster (a change tries them at once).
	// Default DefaultRetryInterval.
	RetryInterval time.Duration
	// ReportGrace is how long a bundle committed on a node may be missing
	// from the node's load reports before it counts as lost (a report
	// taken before the commit arrives after it; a head restarted after a
	// commit it never recorded). Default DefaultReportGrace.
	ReportGrace time.Duration
	// MaxRemoved bounds the removed groups kept for listing (oldest
	// forgotten first). Default DefaultMaxRemoved.
	MaxRemoved int
	// MaxGroups bounds the live groups; a creation past it is refused
	// RESOURCE_EXHAUSTED. Default DefaultMaxGroups.
	MaxGroups int
	// Logger; default: discard.
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultOpTimeout     = 10 * time.Second
	DefaultRetryInterval = time.Second
	DefaultReportGrace   = 3 * time.Second
	DefaultMaxRemoved    = 1000
	DefaultMaxGroups     = 100000
	// MaxBundles bounds a group's bundles.
	MaxBundles = 1024
)

func (c Config) withDefaults() Config {
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.RetryInterval <= 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.ReportGrace <= 0 {
		c.ReportGrace = DefaultReportGrace
	}
	if c.MaxRemoved <= 0 {
		c.MaxRemoved = DefaultMaxRemoved
	}
	if c.MaxGroups <= 0 {
		c.MaxGroups = DefaultMaxGroups
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Manager is the placement-group manager's state machine: the groups,
// the nodes as it sees them, and the two-phase commits in flight. Events
// go in as method calls with the current time; what the world must do
// comes out of Effects. It does no I/O, reads no clock and starts no
// goroutine; it is not safe for concurrent use. See the package doc.
type Manager struct {
	cfg     Config
	now     time.Time
	groups  map[ids.ID16]*group
	names   map[string]ids.ID16 // namespace "\x00" name → live group
	removed []ids.ID16          // removed groups kept for listing, oldest first
	live    int
	nodes   map[ids.NodeID]*node
	// placedOn are the bundles placed on each node; unplaced the live
	// groups with bundles not placed.
	placedOn map[ids.NodeID]map[bundleKey]bool
	unplaced map[ids.ID16]*group
	txns     map[uint64]*txn
	lastTxn  uint64
	lastTry  time.Time
	// dirty: a node's room grew since pending groups were last tried.
	dirty   bool
	effects []Effect
}

// group is a placement group the Manager knows.
type group struct {
	info    *atollpb.PlacementGroupInfo
	bundles []raylet.Resources
	// placed is the node each bundle is committed on (zero: none), and
	// since when (a report may lag behind a commit).
	placed []ids.NodeID
	since  time.Time
	txn    *txn
	seq    uint64 // creation order: pending groups are tried in it
	// announced: its creation was published (a pending reason found
	// while it is created goes out with it).
	announced bool
	// moved: placed changed since info's BundleNodes were set.
	moved bool
}

// node is a live node as the Manager sees it.
type node struct {
	id         ids.NodeID
	total      raylet.Resources // plain
	avail      raylet.Resources // plain, from the last load report (else total)
	reported   bool
	draining   bool
	reportedAt time.Time
	held       map[bundleKey]bool // in the last report (committed: true)
	inflight   map[bundleKey]raylet.Resources
	unreleased map[bundleKey]release // releases sent, not seen gone from a report yet
	// notified: removed groups the node's reports show work waiting
	// for, and when the node was last told of the removal (Waiting).
	notified map[ids.ID16]time.Time
}

// release is a RELEASE sent to a node: the bundle's resources (nil when
// not known here) and when it was sent. A node's reports that still list
// the bundle past ReportGrace after it was sent have it sent again: a
// RELEASE lost on its way (NATS delivers at most once) would otherwise
// leave the bundle held for good.
type release struct {
	resources raylet.Resources
	sent      time.Time
}

// bundleKey names one bundle.
type bundleKey struct {
	pg    ids.ID16
	index int32
}

// txn is a two-phase commit of some of a group's bundles.
type txn struct {
	id       uint64
	g        *group
	commit   bool                    // the second phase
	onePhase bool                    // one node: its prepare commits too
	nodes    map[ids.NodeID][]int    // bundle indices per node
	waiting  map[ids.NodeID]struct{} // answers outstanding
	refused  string                  // the first refusal
	lost     map[ids.NodeID]bool     // nodes whose commit failed
	deadline time.Time
}

// New returns an empty Manager.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg.withDefaults(), groups: map[ids.ID16]*group{}, names: map[string]ids.ID16{},
		nodes: map[ids.NodeID]*node{}, txns: map[uint64]*txn{}, placedOn: map[ids.NodeID]map[bundleKey]bool{},
		unplaced: map[ids.ID16]*group{}}
}

// Effects returns the effects of the events since the last call, in
// order.
func (m *Manager) Effects() []Effect {
	out := m.effects
	m.effects = nil
	return out
}

func (m *Manager) emit(e Effect) { m.effects = append(m.effects, e) }

func nameKey(namespace, name string) string { return namespace + "\x00" + name }

// CheckCreate validates a creation and returns the entry Create takes: a
// new group is PENDING, with its creation time. An id known already
// returns nil (a repeated request: nothing to do). The shell writes the
// entry to the store and answers the creation once it is stored (a write
// that fails removes the group again).
func (m *Manager) CheckCreate(now time.Time, info *atollpb.PlacementGroupInfo) (*atollpb.PlacementGroupInfo, error) {
	id, err := ids.FromBytes(info.GetPlacementGroupId())
	if err != nil || id.IsZero() {
		return nil, errs.Invalidf("placement group: malformed id (%d bytes)", len(info.GetPlacementGroupId()))
	}
	if g := m.groups[id]; g != nil {
		if g.info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
			return nil, errs.Invalidf("placement group %s was removed", id.Short())
		}
		return nil, nil
	}
	if err := ValidateBundles(info.GetBundles(), info.GetStrategy()); err != nil {
		return nil, err
	}
	if n := info.GetName(); n != "" {
		if other, ok := m.names[nameKey(info.GetNamespace(), n)]; ok {
			return nil, errs.Invalidf("placement group name %q is already taken in namespace %q (by %s)", n, info.GetNamespace(), other.Short())
		}
	}
	if m.live >= m.cfg.MaxGroups {
		return nil, errs.Exhaustedf("placement group: %d live groups, the most the GCS keeps", m.live)
	}
	next := proto.CloneOf(info)
	next.State = atollpb.PlacementGroupState_PLACEMENT_GROUP_PENDING
	next.BundleNodes = make([][]byte, len(next.Bundles))
	next.Reason, next.Infeasible = "", false
	next.CreateTimeUnixMs = now.UnixMilli()
	next.CreatedTimeUnixMs, next.RemoveTimeUnixMs, next.Reschedules = 0, 0, 0
	return next, nil
}

// ValidateBundles checks a group's bundles and strategy: at least one
// bundle, at most MaxBundles, each holding some positive amount of
// resources and no negative, NaN or placement-group resource.
func ValidateBundles(bundles []*atollpb.Bundle, strategy atollpb.PlacementStrategy) error {
	if _, ok := atollpb.PlacementStrategy_name[int32(strategy)]; !ok {
		return errs.Invalidf("placement group: unknown strategy %d", int32(strategy))
	}
	if len(bundles) == 0 {
		return errs.Invalidf("placement group: no bundles")
	}
	if len(bundles) > MaxBundles {
		return errs.Invalidf("placement group: %d bundles, at most %d", len(bundles), MaxBundles)
	}
	for i, b := range bundles {
		some := false
		for k, v := range b.GetResources() {
			switch {
			case k == "":
				return errs.Invalidf("placement group: bundle %d: a resource without a name", i)
			case raylet.IsGroupResource(k):
				return errs.Invalidf("placement group: bundle %d: %s is a placement group's resource", i, k)
			case !(v >= 0) || v > 1e15:
				return errs.Invalidf("placement group: bundle %d: %s=%g (want a positive amount)", i, k, v)
			}
			some = some || v > 0
		}
		if !some {
			return errs.Invalidf("placement group: bundle %d holds no resources (give it e.g. {\"CPU\": 1})", i)
		}
	}
	return nil
}

// Create adds a group CheckCreate returned and tries to place it.
func (m *Manager) Create(now time.Time, info *atollpb.PlacementGroupInfo) {
	m.now = now
	id := ids.MustFromBytes(info.PlacementGroupId)
	if m.groups[id] != nil {
		return
	}
	g := m.add(info)
	g.announced = false
	m.try(g)
	g.announced = true
	m.emit(Changed{Info: g.snapshot()})
}

// add records a group from its entry.
func (m *Manager) add(info *atollpb.PlacementGroupInfo) *group {
	id := ids.MustFromBytes(info.PlacementGroupId)
	g := &group{info: info, placed: make([]ids.NodeID, len(info.Bundles)), since: m.now}
	m.lastTxn++ // creation order shares the counter: both only grow
	g.seq = m.lastTxn
	for _, b := range info.Bundles {
		g.bundles = append(g.bundles, raylet.Resources(maps.Clone(b.GetResources())))
	}
	if len(info.BundleNodes) != len(info.Bundles) {
		info.BundleNodes = make([][]byte, len(info.Bundles))
	}
	m.groups[id] = g
	for i, b := range info.BundleNodes {
		if n, err := ids.FromBytes(b); err == nil && !n.IsZero() {
			m.setPlaced(g, i, n)
		}
	}
	g.announced = true
	m.track(g)
	if info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
		m.removed = append(m.removed, id)
		return g
	}
	m.live++
	if info.Name != "" {
		m.names[nameKey(info.Namespace, info.Name)] = id
	}
	return g
}

// Restore loads the groups of a restarted head's store: pending and
// rescheduling ones are tried again; created ones keep their placement,
// which the nodes' load reports confirm (a bundle missing from its node's
// reports past ReportGrace is placed again).
func (m *Manager) Restore(now time.Time, infos []*atollpb.PlacementGroupInfo) {
	m.now = now
	slices.SortFunc(infos, func(a, b *atollpb.PlacementGroupInfo) int {
		return cmp.Or(cmp.Compare(a.CreateTimeUnixMs, b.CreateTimeUnixMs), bytes.Compare(a.PlacementGroupId, b.PlacementGroupId))
	})
	for _, info := range infos {
		if id, err := ids.FromBytes(info.GetPlacementGroupId()); err != nil || m.groups[id] != nil {
			continue
		}
		m.add(proto.CloneOf(info))
	}
	slices.SortStableFunc(m.removed, func(a, b ids.ID16) int {
		return cmp.Compare(m.groups[a].info.RemoveTimeUnixMs, m.groups[b].info.RemoveTimeUnixMs)
	})
	m.prune()
}

// prune forgets the removed groups past MaxRemoved, oldest first.
func (m *Manager) prune() {
	for len(m.removed) > m.cfg.MaxRemoved {
		delete(m.groups, m.removed[0])
		m.emit(Forget{ID: m.removed[0]})
		m.removed = m.removed[1:]
	}
}

// CheckRemove validates a removal: nil if id is a live group (the shell
// then calls Remove and writes the removed entry, answering once it is
// stored), ErrNotFound if it is unknown; a removed group returns
// ErrAlreadyRemoved.
func (m *Manager) CheckRemove(id ids.ID16) error {
	g := m.groups[id]
	switch {
	case g == nil:
		return errs.NotFoundf("placement group %s not found", id.Short())
	case g.info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED:
		return ErrAlreadyRemoved
	}
	return nil
}

// ErrAlreadyRemoved: the group was removed before (a removal is
// idempotent: callers treat it as done).
var ErrAlreadyRemoved = errs.Invalidf("placement group already removed")

// Remove removes a live group: an in-flight commit is aborted, its
// bundles released (killing what runs in them) and every node told. Its
// entry stays, REMOVED, for listing; the oldest removed past MaxRemoved
// are forgotten (Forget).
func (m *Manager) Remove(now time.Time, id ids.ID16, reason string) {
	m.now = now
	g := m.groups[id]
	if g == nil || g.info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
		return
	}
	if reason == "" {
		reason = "removed"
	}
	if t := g.txn; t != nil {
		m.abort(t, "the group was removed")
	}
	byNode := map[ids.NodeID][]int{}
	for i, n := range g.placed {
		if !n.IsZero() {
			byNode[n] = append(byNode[n], i)
		}
	}
	for _, n := range sortedNodes(byNode) {
		m.release(g, n, byNode[n], reason)
	}
	next := shallowCopy(g.info)
	next.State = atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED
	next.Reason = reason
	next.RemoveTimeUnixMs = now.UnixMilli()
	next.Infeasible = false
	g.info = next
	for i := range g.placed {
		m.setPlaced(g, i, ids.NodeID{})
	}
	m.live--
	if next.Name != "" && m.names[nameKey(next.Namespace, next.Name)] == id {
		delete(m.names, nameKey(next.Namespace, next.Name))
	}
	m.removed = append(m.removed, id)
	m.emit(Changed{Info: g.snapshot()})
	m.prune()
	m.tryPending() // its resources are free
}

// release sends a RELEASE of bundles of g on node n.
func (m *Manager) release(g *group, n ids.NodeID, indices []int, reason string) {
	op := &atollpb.BundleOp{Kind: atollpb.BundleOp_RELEASE, NodeId: n.Bytes(), Reason: reason}
	for _, i := range indices {
		op.Bundles = append(op.Bundles, g.ref(i))
		if nd := m.nodes[n]; nd != nil {
			k := bundleKey{pg: g.id(), index: int32(i)}
			delete(nd.inflight, k)
			if nd.unreleased == nil {
				nd.unreleased = map[bundleKey]release{}
			}
			nd.unreleased[k] = release{resources: g.bundles[i], sent: m.now}
		}
	}
	m.emit(Send{Node: n, Op: op})
}

// setPending records why a group is not placed yet.
func (m *Manager) setPending(g *group, reason string, infeasible bool) {
	if g.info.Reason == reason && g.info.Infeasible == infeasible {
		return
	}
	next := shallowCopy(g.info)
	next.Reason, next.Infeasible = reason, infeasible
	g.info = next
	if g.announced {
		m.emit(Changed{Info: g.snapshot()})
	}
}

// Tick moves time: transactions past their deadline count the missing
// answers as refusals (a commit's as lost), and pending groups are tried
// again every RetryInterval.
func (m *Manager) Tick(now time.Time) {
	m.now = now
	for _, t := range m.sortedTxns() {
		if now.Before(t.deadline) {
			continue
		}
		for _, n := range sortedNodes(t.waiting) {
			if t.commit {
				delete(t.waiting, n)
				t.lostOn(n)
				m.progress(t)
			} else {
				m.answer(t, n, fmt.Sprintf("node %s did not answer within %v", n.Short(), m.cfg.OpTimeout))
			}
		}
	}
	if m.dirty || now.Sub(m.lastTry) >= m.cfg.RetryInterval {
		m.tryPending()
	}
}

// tryPending tries every group not fully placed, oldest first.
func (m *Manager) tryPending() {
	m.lastTry, m.dirty = m.now, false
	for _, g := range m.sortedUnplaced() {
		if g.txn == nil {
			m.try(g)
		}
	}
}

// sortedUnplaced are the live groups not fully placed, oldest first.
func (m *Manager) sortedUnplaced() []*group {
	out := make([]*group, 0, len(m.unplaced))
	for _, g := range m.unplaced {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// track keeps g in unplaced while it is live and not fully placed.
func (m *Manager) track(g *group) {
	if g.info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED && !g.complete() {
		m.unplaced[g.id()] = g
	} else {
		delete(m.unplaced, g.id())
	}
}

// try schedules a group's unplaced bundles and starts their commit, or
// records why not.
func (m *Manager) try(g *group) {
	if g.txn != nil || g.complete() {
		return
	}
	var need []int
	for i, n := range g.placed {
		if n.IsZero() {
			need = append(need, i)
		}
	}
	v := Schedule(Request{Strategy: g.info.Strategy, Bundles: g.bundles, Need: need, Placed: g.placed}, m.views())
	if v.Reason != "" {
		m.setPending(g, v.Reason, v.Infeasible)
		return
	}
	if g.info.Reason != "" || g.info.Infeasible {
		// Being reserved: the last reason no longer holds.
		next := shallowCopy(g.info)
		next.Reason, next.Infeasible = "", false
		g.info = next
	}
	m.lastTxn++
	t := &txn{id: m.lastTxn, g: g, nodes: map[ids.NodeID][]int{}, waiting: map[ids.NodeID]struct{}{}, deadline: m.now.Add(m.cfg.OpTimeout)}
	for _, i := range need {
		t.nodes[v.Nodes[i]] = append(t.nodes[v.Nodes[i]], i)
	}
	m.txns[t.id] = t
	g.txn = t
	// With a single node, its all-or-none prepare is the whole
	// transaction: it commits at once (one phase, one round trip).
	t.onePhase = len(t.nodes) == 1
	for _, n := range sortedNodes(t.nodes) {
		slices.Sort(t.nodes[n])
		t.waiting[n] = struct{}{}
		nd := m.nodes[n]
		op := &atollpb.BundleOp{Kind: atollpb.BundleOp_PREPARE, NodeId: n.Bytes(), Txn: t.id, Commit: t.onePhase}
		for _, i := range t.nodes[n] {
			op.Bundles = append(op.Bundles, g.ref(i))
			if nd.inflight == nil {
				nd.inflight = map[bundleKey]raylet.Resources{}
			}
			k := bundleKey{pg: g.id(), index: int32(i)}
			nd.inflight[k] = g.bundles[i]
			// A release of the same bundle sent before (an aborted
			// transaction's) is behind this prepare: the node's reports
			// that list the bundle from now on count this one.
			delete(nd.unreleased, k)
		}
		m.emit(Send{Node: n, Op: op})
	}
}

// views are the live nodes that take bundles, with the room the
// Manager's own prepares in flight leave.
func (m *Manager) views() []NodeView {
	out := make([]NodeView, 0, len(m.nodes))
	for _, n := range m.nodes {
		if n.draining {
			continue
		}
		avail := n.avail.Clone()
		if avail == nil {
			avail = raylet.Resources{}
		}
		if !n.reported {
			// Without reports, only what the Manager placed there or is
			// preparing there is known to be taken.
			for k := range m.placedOn[n.id] {
				avail.Sub(m.groups[k.pg].bundles[k.index])
			}
			for k, r := range n.inflight {
				if !m.placedOn[n.id][k] {
					avail.Sub(r)
				}
			}
		} else {
			for _, r := range n.inflight {
				avail.Sub(r)
			}
			// Bundles released since the report (which counts them
			// taken) are free again.
			for k, r := range n.unreleased {
				if _, held := n.held[k]; held {
					avail.Add(r.resources)
				}
			}
		}
		out = append(out, NodeView{ID: n.id, Total: n.total, Available: avail})
	}
	return out
}

// setPlaced records bundle i of g on node n (zero: on none).
func (m *Manager) setPlaced(g *group, i int, n ids.NodeID) {
	k := bundleKey{pg: g.id(), index: int32(i)}
	if old := g.placed[i]; !old.IsZero() {
		if set := m.placedOn[old]; set != nil {
			delete(set, k)
			if len(set) == 0 {
				delete(m.placedOn, old)
			}
		}
	}
	g.placed[i] = n
	g.moved = true
	if !n.IsZero() {
		if m.placedOn[n] == nil {
			m.placedOn[n] = map[bundleKey]bool{}
		}
		m.placedOn[n][k] = true
	}
	m.track(g)
}

// Synced tells the Manager it heard of every node the GCS knows (after a
// head's restart): bundles placed on nodes it has not heard of are placed
// again.
func (m *Manager) Synced(now time.Time) {
	m.now = now
	var gone []ids.NodeID
	for n := range m.placedOn {
		if m.nodes[n] == nil {
			gone = append(gone, n)
		}
	}
	slices.SortFunc(gone, func(a, b ids.NodeID) int { return bytes.Compare(a[:], b[:]) })
	for _, n := range gone {
		var groups []*group
		for k := range m.placedOn[n] {
			if g := m.groups[k.pg]; g != nil && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		slices.SortFunc(groups, func(a, b *group) int { return cmp.Compare(a.seq, b.seq) })
		for _, g := range groups {
			for i, p := range g.placed {
				if p == n {
					m.setPlaced(g, i, ids.NodeID{})
				}
			}
			m.reschedule(g, fmt.Sprintf("node %s is gone", n.Short()))
		}
	}
	m.tryPending()
}

func (g *group) id() ids.ID16 { return ids.MustFromBytes(g.info.PlacementGroupId) }

// shallowCopy copies an entry's fields, sharing its bundles (which never
// change): an entry handed out is never changed, the next state is a new
// one (a deep proto.Clone would cost more than the rest of a step).
func shallowCopy(i *atollpb.PlacementGroupInfo) *atollpb.PlacementGroupInfo {
	return &atollpb.PlacementGroupInfo{
		PlacementGroupId: i.PlacementGroupId, Name: i.Name, Namespace: i.Namespace, Strategy: i.Strategy, Bundles: i.Bundles,
		State: i.State, BundleNodes: i.BundleNodes, Reason: i.Reason, Infeasible: i.Infeasible, CreatorNodeId: i.CreatorNodeId,
		JobId: i.JobId, Detached: i.Detached, CreateTimeUnixMs: i.CreateTimeUnixMs, CreatedTimeUnixMs: i.CreatedTimeUnixMs,
		RemoveTimeUnixMs: i.RemoveTimeUnixMs, Reschedules: i.Reschedules,
	}
}

func (g *group) complete() bool {
	for _, n := range g.placed {
		if n.IsZero() {
			return false
		}
	}
	return true
}

func (g *group) ref(i int) *atollpb.BundleRef {
	return &atollpb.BundleRef{PlacementGroupId: g.info.PlacementGroupId, Index: int32(i), Resources: g.info.Bundles[i].GetResources()}
}

func (g *group) nodeBytes() [][]byte {
	out := make([][]byte, len(g.placed))
	for i, n := range g.placed {
		if !n.IsZero() {
			out[i] = n.Bytes()
		}
	}
	return out
}

// snapshot is the group's entry, its placement up to date; the caller
// may keep it (entries are replaced, never changed in place).
func (g *group) snapshot() *atollpb.PlacementGroupInfo {
	if g.moved {
		g.info = shallowCopy(g.info)
		g.info.BundleNodes = g.nodeBytes()
		g.moved = false
	}
	return g.info
}

func (m *Manager) sortedGroups() []*group {
	out := make([]*group, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (m *Manager) sortedTxns() []*txn {
	out := make([]*txn, 0, len(m.txns))
	for _, t := range m.txns {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *txn) int { return cmp.Compare(a.id, b.id) })
	return out
}

func sortedNodes[V any](m map[ids.NodeID]V) []ids.NodeID {
	out := make([]ids.NodeID, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b ids.NodeID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

func sortedIDs[V any](m map[ids.ID16]V) []ids.ID16 { return sortedNodes(m) }
