package gcs

import (
	"bytes"
	"encoding/hex"
	"maps"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// tables is the GCS state: nodes, actors (with the index of live names) and
// jobs. It is pure: no I/O, no clock (times come in as arguments), owned by
// the GCS actor alone. Mutations come in two steps so the actor can write
// through to JetStream before it changes memory: a check method validates
// a request against the current state and returns the key and the entry to
// store (a nil entry when nothing changes), and a put method applies a
// stored entry. Entries are never shared with callers' messages (checks
// clone), so a failed write leaves no trace.
//
// Dead nodes, dead actors and finished jobs are bounded: each table
// remembers the order in which its entries died (or finished), and
// overCap names the oldest past a cap for the actor to forget (drop).
type tables struct {
	nodes  map[string]*atollpb.NodeInfo
	actors map[string]*atollpb.ActorInfo
	// names maps (namespace, name) to the key of the live actor holding it.
	names map[actorName]string
	jobs  map[string]*atollpb.JobInfo
	// The dead (finished) entries of each table, in order of death.
	deadNodes, deadActors, finishedJobs deathOrder
	// caps bound the live entries (Nodes, Actors, Jobs) and the bytes
	// (Bytes) a check admits (0: no bound); the server sets them. bytes
	// estimates what each table's entries take in its bucket (bounds.go).
	caps  limits
	bytes [numTables]int64
}

// actorName is a name within a namespace.
type actorName struct{ namespace, name string }

func newTables() *tables {
	return &tables{
		nodes:        map[string]*atollpb.NodeInfo{},
		actors:       map[string]*atollpb.ActorInfo{},
		names:        map[actorName]string{},
		jobs:         map[string]*atollpb.JobInfo{},
		deadNodes:    newDeathOrder(),
		deadActors:   newDeathOrder(),
		finishedJobs: newDeathOrder(),
	}
}

// key renders a 16-byte id as the hex key used in memory and in KV.
func key(kind string, id []byte) (string, error) {
	v, err := ids.FromBytes(id)
	if err != nil {
		return "", errs.Invalidf("%s id: %v", kind, err)
	}
	return v.String(), nil
}

// checkRegisterNode returns the entry that registers (or re-registers) n
// as alive.
func (t *tables) checkRegisterNode(n *atollpb.NodeInfo, nowMs int64) (string, *atollpb.NodeInfo, error) {
	k, err := key("node", n.GetNodeId())
	if err != nil {
		return "", nil, err
	}
	next := proto.CloneOf(n)
	next.State = atollpb.NodeState_NODE_ALIVE
	next.EndTimeUnixMs = 0
	next.Left, next.EndReason = false, ""
	if next.StartTimeUnixMs == 0 {
		next.StartTimeUnixMs = nowMs
	}
	cur, known := t.nodes[k]
	if err := t.admit(nodesTable, k, next, known, !known || cur.State == atollpb.NodeState_NODE_DEAD); err != nil {
		return "", nil, err
	}
	return k, next, nil
}

// checkReregisterNode returns the entry that registers n again after its
// connection came back: as checkRegisterNode (the GCS may have lost or
// never had the entry), except that a node the GCS lists dead stays dead:
// the cluster gave its work to others, and the node must learn so and
// stop (NODE_DIED) rather than come back. A known entry keeps its start
// time.
func (t *tables) checkReregisterNode(n *atollpb.NodeInfo, nowMs int64) (string, *atollpb.NodeInfo, error) {
	k, err := key("node", n.GetNodeId())
	if err != nil {
		return "", nil, err
	}
	cur, ok := t.nodes[k]
	if ok && cur.State == atollpb.NodeState_NODE_DEAD {
		return "", nil, &errs.NodeDiedError{NodeID: k, Message: "the cluster declared this node dead; it cannot register again"}
	}
	if ok {
		n = proto.CloneOf(n)
		n.StartTimeUnixMs = cur.StartTimeUnixMs
	}
	return t.checkRegisterNode(n, nowMs)
}

// MaxEndReasonBytes bounds a node's end reason (MarkNodeDead.reason).
const MaxEndReasonBytes = 256

// checkMarkNodeDead returns the dead entry of a known node, or nil if it is
// already dead (the first end, and its reason, stand).
func (t *tables) checkMarkNodeDead(m *atollpb.MarkNodeDead, nowMs int64) (string, *atollpb.NodeInfo, error) {
	k, err := key("node", m.GetNodeId())
	if err != nil {
		return "", nil, err
	}
	if len(m.GetReason()) > MaxEndReasonBytes || !utf8.ValidString(m.GetReason()) {
		return "", nil, errs.Invalidf("node %s: end reason: want at most %d bytes of UTF-8", k, MaxEndReasonBytes)
	}
	cur, ok := t.nodes[k]
	if !ok {
		return "", nil, errs.NotFoundf("node %s not found", k)
	}
	if cur.State == atollpb.NodeState_NODE_DEAD {
		return k, nil, nil
	}
	next := proto.CloneOf(cur)
	next.State = atollpb.NodeState_NODE_DEAD
	next.EndTimeUnixMs = nowMs
	next.Left, next.EndReason = m.GetLeft(), m.GetReason()
	return k, next, nil
}

// actorsOn returns the next entries of the live actors hosted on a node
// that died: RESTARTING, with no node or address and one restart more,
// for an actor with restarts left whose owner's node lives (its owner
// sends its creation again, and the new host reports it ALIVE); DEAD for
// the others.
func (t *tables) actorsOn(node []byte) []*atollpb.ActorInfo {
	var out []*atollpb.ActorInfo
	for _, a := range sortedValues(t.actors) {
		if a.State == atollpb.ActorState_ACTOR_DEAD || !bytes.Equal(a.NodeId, node) {
			continue
		}
		next := proto.CloneOf(a)
		if t.restartable(a, node) {
			next.State, next.NodeId, next.Address = atollpb.ActorState_ACTOR_RESTARTING, nil, ""
			next.NumRestarts++
		} else {
			next.State = atollpb.ActorState_ACTOR_DEAD
			next.DeathCause = errs.ToProto(&errs.NodeDiedError{NodeID: hex.EncodeToString(node), Message: "the actor's node died"})
		}
		out = append(out, next)
	}
	return out
}

// restartable reports whether an actor whose node died restarts: it has
// restarts left and its owner's node (which sends its creation again) is
// another node, alive.
func (t *tables) restartable(a *atollpb.ActorInfo, dead []byte) bool {
	if a.MaxRestarts >= 0 && a.NumRestarts >= a.MaxRestarts || len(a.OwnerNodeId) == 0 || bytes.Equal(a.OwnerNodeId, dead) {
		return false
	}
	owner, ok := t.nodes[hex.EncodeToString(a.OwnerNodeId)]
	return ok && owner.State == atollpb.NodeState_NODE_ALIVE
}

// putNode stores a node entry under its key. A node that registers again
// leaves the dead ones.
func (t *tables) putNode(k string, n *atollpb.NodeInfo) {
	t.account(nodesTable, t.nodes[k], n)
	t.nodes[k] = n
	t.deadNodes.set(k, n.State == atollpb.NodeState_NODE_DEAD)
}

// listNodes returns a page of the nodes, dead ones included, ordered by id.
func (t *tables) listNodes(p *atollpb.ListPage, budget int) ([]*atollpb.NodeInfo, bool, error) {
	return page(t.nodes, "node", p, budget, nil)
}

// checkRegisterActor returns the entry that registers a. Registering the
// same id again is an idempotent upsert; a name held by another live actor
// is refused.
func (t *tables) checkRegisterActor(a *atollpb.ActorInfo) (string, *atollpb.ActorInfo, error) {
	k, err := key("actor", a.GetActorId())
	if err != nil {
		return "", nil, err
	}
	next := proto.CloneOf(a)
	fitCause(next, t.caps.Entry)
	switch next.State {
	case atollpb.ActorState_ACTOR_STATE_UNSPECIFIED:
		next.State = atollpb.ActorState_ACTOR_PENDING_CREATION
	case atollpb.ActorState_ACTOR_DEAD:
		return "", nil, errs.Invalidf("actor %s registered as DEAD", k)
	}
	if cur, ok := t.actors[k]; ok {
		if err := sameIdentity(k, cur, next); err != nil {
			return "", nil, err
		}
	} else if err := t.admit(actorsTable, k, next, false, true); err != nil {
		return "", nil, err
	}
	if next.Name != "" {
		if holder, ok := t.names[nameOf(next)]; ok && holder != k {
			return "", nil, errs.Invalidf("actor name %q is already taken in namespace %q", next.Name, next.Namespace)
		}
	}
	return k, next, nil
}

// checkUpdateActor returns the entry that replaces a known actor's entry
// with a. Name and namespace cannot change and a dead actor stays dead.
// A death cause that would take the entry past the largest the GCS takes
// is shortened (fitCause), so a state change never fails for its cause's
// size; the node-death path (actorsOn) goes through here too.
func (t *tables) checkUpdateActor(a *atollpb.ActorInfo) (string, *atollpb.ActorInfo, error) {
	k, err := key("actor", a.GetActorId())
	if err != nil {
		return "", nil, err
	}
	cur, ok := t.actors[k]
	if !ok {
		return "", nil, errs.NotFoundf("actor %s not found", k)
	}
	if a.State == atollpb.ActorState_ACTOR_STATE_UNSPECIFIED {
		return "", nil, errs.Invalidf("update of actor %s has no state", k)
	}
	if err := sameIdentity(k, cur, a); err != nil {
		return "", nil, err
	}
	// A host's report that comes after its node was declared dead (its
	// actors restart elsewhere, or died with it) changes nothing.
	if a.State != atollpb.ActorState_ACTOR_DEAD && len(a.NodeId) > 0 {
		if n, ok := t.nodes[hex.EncodeToString(a.NodeId)]; ok && n.State == atollpb.NodeState_NODE_DEAD {
			return k, nil, nil
		}
	}
	next := proto.CloneOf(a)
	if len(next.OwnerNodeId) == 0 {
		next.OwnerNodeId = cur.OwnerNodeId // hosts report without it
	}
	// A cause too large for the entry must not keep the state from
	// changing (cause.go).
	fitCause(next, t.caps.Entry)
	return k, next, nil
}

// sameIdentity refuses a change of name or namespace and the revival of a
// dead actor, which would corrupt the name index.
func sameIdentity(k string, cur, next *atollpb.ActorInfo) error {
	if cur.Name != next.Name || cur.Namespace != next.Namespace {
		return errs.Invalidf("actor %s is named %q in namespace %q; its name cannot change", k, cur.Name, cur.Namespace)
	}
	if cur.State == atollpb.ActorState_ACTOR_DEAD && next.State != atollpb.ActorState_ACTOR_DEAD {
		return errs.Invalidf("actor %s is dead and cannot change state to %v", k, next.State)
	}
	return nil
}

// putActor stores an actor entry under its key and keeps the name index: a
// live named actor holds its name, a dead one frees it.
func (t *tables) putActor(k string, a *atollpb.ActorInfo) {
	if old, ok := t.actors[k]; ok && old.Name != "" && t.names[nameOf(old)] == k {
		delete(t.names, nameOf(old))
	}
	t.account(actorsTable, t.actors[k], a)
	t.actors[k] = a
	t.deadActors.set(k, a.State == atollpb.ActorState_ACTOR_DEAD)
	if a.Name == "" {
		return
	}
	n := nameOf(a)
	if a.State == atollpb.ActorState_ACTOR_DEAD {
		if t.names[n] == k {
			delete(t.names, n)
		}
		return
	}
	t.names[n] = k
}

// getActor returns the actor with the given id.
func (t *tables) getActor(id []byte) (*atollpb.ActorInfo, error) {
	k, err := key("actor", id)
	if err != nil {
		return nil, err
	}
	a, ok := t.actors[k]
	if !ok {
		return nil, errs.NotFoundf("actor %s not found", k)
	}
	return a, nil
}

// getNamedActor returns the live actor holding a name.
func (t *tables) getNamedActor(namespace, name string) (*atollpb.ActorInfo, error) {
	k, ok := t.names[actorName{namespace, name}]
	if !ok {
		return nil, errs.NotFoundf("no live actor named %q in namespace %q", name, namespace)
	}
	return t.actors[k], nil
}

// listActors returns a page of the actors, dead ones included, ordered by
// id; with left_on_dead_nodes only those not DEAD on a node listed dead.
func (t *tables) listActors(m *atollpb.ListActors, budget int) ([]*atollpb.ActorInfo, bool, error) {
	var keep func(*atollpb.ActorInfo) bool
	if m.GetLeftOnDeadNodes() {
		keep = func(a *atollpb.ActorInfo) bool {
			if a.State == atollpb.ActorState_ACTOR_DEAD || len(a.NodeId) == 0 {
				return false
			}
			k, err := key("node", a.NodeId)
			return err == nil && t.nodes[k].GetState() == atollpb.NodeState_NODE_DEAD
		}
	}
	return page(t.actors, "actor", m.GetPage(), budget, keep)
}

// checkAddJob returns the entry that adds (or replaces) a job.
func (t *tables) checkAddJob(j *atollpb.JobInfo, nowMs int64) (string, *atollpb.JobInfo, error) {
	k, err := key("job", j.GetJobId())
	if err != nil {
		return "", nil, err
	}
	next := proto.CloneOf(j)
	if next.StartTimeUnixMs == 0 {
		next.StartTimeUnixMs = nowMs
	}
	cur, known := t.jobs[k]
	if err := t.admit(jobsTable, k, next, known, !j.Finished && (!known || cur.Finished)); err != nil {
		return "", nil, err
	}
	return k, next, nil
}

// checkFinishJob returns the finished entry of a known job, or nil if it
// has already finished.
func (t *tables) checkFinishJob(id []byte, nowMs int64) (string, *atollpb.JobInfo, error) {
	k, err := key("job", id)
	if err != nil {
		return "", nil, err
	}
	cur, ok := t.jobs[k]
	if !ok {
		return "", nil, errs.NotFoundf("job %s not found", k)
	}
	if cur.Finished {
		return k, nil, nil
	}
	next := proto.CloneOf(cur)
	next.Finished = true
	next.EndTimeUnixMs = nowMs
	return k, next, nil
}

// putJob stores a job entry under its key.
func (t *tables) putJob(k string, j *atollpb.JobInfo) {
	t.account(jobsTable, t.jobs[k], j)
	t.jobs[k] = j
	t.finishedJobs.set(k, j.Finished)
}

// listJobs returns a page of the jobs, ordered by id.
func (t *tables) listJobs(p *atollpb.ListPage, budget int) ([]*atollpb.JobInfo, bool, error) {
	return page(t.jobs, "job", p, budget, nil)
}

// limits are the caps on the dead entries the tables keep, and on the
// live ones and the bytes they admit (bounds.go).
type limits struct {
	DeadNodes, DeadActors, FinishedJobs int
	Nodes, Actors, Jobs                 int
	// Bytes is the budget of each table's entries in its bucket, Entry
	// the largest entry.
	Bytes [numTables]int64
	Entry int
}

// table names one of the three tables.
type table int

const (
	nodesTable table = iota
	actorsTable
	jobsTable
	numTables
)

func (k table) String() string {
	return [...]string{"nodes", "actors", "jobs"}[k]
}

// victim is an entry to forget.
type victim struct {
	table table
	key   string
}

// overCap returns the dead nodes, dead actors and finished jobs past the
// caps, the oldest deaths first. It changes nothing: the actor removes
// them from KV and then drops them.
func (t *tables) overCap(l limits) []victim {
	var out []victim
	for _, c := range []struct {
		table table
		order *deathOrder
		max   int
	}{
		{nodesTable, &t.deadNodes, l.DeadNodes},
		{actorsTable, &t.deadActors, l.DeadActors},
		{jobsTable, &t.finishedJobs, l.FinishedJobs},
	} {
		for _, k := range c.order.oldest(c.order.len() - c.max) {
			out = append(out, victim{c.table, k})
		}
	}
	return out
}

// drop forgets an entry.
func (t *tables) drop(v victim) {
	switch v.table {
	case nodesTable:
		t.account(nodesTable, t.nodes[v.key], nil)
		delete(t.nodes, v.key)
		t.deadNodes.set(v.key, false)
	case actorsTable:
		if a, ok := t.actors[v.key]; ok && a.Name != "" && t.names[nameOf(a)] == v.key {
			delete(t.names, nameOf(a))
		}
		t.account(actorsTable, t.actors[v.key], nil)
		delete(t.actors, v.key)
		t.deadActors.set(v.key, false)
	case jobsTable:
		t.account(jobsTable, t.jobs[v.key], nil)
		delete(t.jobs, v.key)
		t.finishedJobs.set(v.key, false)
	}
}

// tableSizes counts the entries of the tables: all of them, and the dead
// (finished) ones among them.
type tableSizes struct {
	Nodes, DeadNodes   int
	Actors, DeadActors int
	Jobs, FinishedJobs int
}

func (t *tables) sizes() tableSizes {
	return tableSizes{Nodes: len(t.nodes), DeadNodes: t.deadNodes.len(), Actors: len(t.actors), DeadActors: t.deadActors.len(),
		Jobs: len(t.jobs), FinishedJobs: t.finishedJobs.len()}
}

// deathOrder is the set of a table's dead (or finished) keys in the order
// they died, oldest first. An entry that dies again (a DEAD actor updated)
// keeps its place; one that comes back to life (a node registering again)
// leaves. The queue may hold stale marks of keys no longer dead; they are
// skipped, trimmed from its front, and compacted away when they outnumber
// the live marks.
type deathOrder struct {
	seq   uint64
	at    map[string]uint64 // dead key -> the sequence number of its death
	queue []deathMark
}

type deathMark struct {
	key string
	seq uint64
}

func newDeathOrder() deathOrder { return deathOrder{at: map[string]uint64{}} }

// set records whether key is dead now.
func (o *deathOrder) set(key string, dead bool) {
	_, was := o.at[key]
	switch {
	case dead && !was:
		o.seq++
		o.at[key] = o.seq
		o.queue = append(o.queue, deathMark{key, o.seq})
	case !dead && was:
		delete(o.at, key)
		for len(o.queue) > 0 && o.stale(o.queue[0]) {
			o.queue[0] = deathMark{}
			o.queue = o.queue[1:]
		}
		if len(o.queue) > 2*len(o.at)+64 {
			o.queue = slices.DeleteFunc(slices.Clone(o.queue), o.stale)
		}
	}
}

func (o *deathOrder) stale(m deathMark) bool { return o.at[m.key] != m.seq }

func (o *deathOrder) len() int { return len(o.at) }

// oldest returns the n keys that died first (none if n <= 0).
func (o *deathOrder) oldest(n int) []string {
	if n <= 0 {
		return nil
	}
	out := make([]string, 0, n)
	for _, m := range o.queue {
		if len(out) == n {
			break
		}
		if !o.stale(m) {
			out = append(out, m.key)
		}
	}
	return out
}

func nameOf(a *atollpb.ActorInfo) actorName { return actorName{a.Namespace, a.Name} }

// page returns one page of m's entries that keep accepts (all when keep is
// nil), ordered by key: those after p's after_id, at most p's limit, and at
// most budget bytes encoded (one entry at least, so paging always moves
// on). more says entries were left out. Keys are ids' hex, whose order is
// the ids' byte order.
func page[V proto.Message](m map[string]V, kind string, p *atollpb.ListPage, budget int, keep func(V) bool) (out []V, more bool, err error) {
	after := ""
	if len(p.GetAfterId()) > 0 {
		if after, err = key(kind, p.GetAfterId()); err != nil {
			return nil, false, err
		}
	}
	limit, size := int(p.GetLimit()), 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if k <= after || (keep != nil && !keep(v)) {
			continue
		}
		n := proto.Size(v)
		n += protowire.SizeTag(3) + protowire.SizeBytes(n) - n // the reply's field around it
		if (limit > 0 && len(out) == limit) || (len(out) > 0 && size+n > budget) {
			return out, true, nil
		}
		out, size = append(out, v), size+n
	}
	return out, false, nil
}

func sortedValues[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
