package cluster

import (
	"encoding/hex"
	"log/slog"
	"sync"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// owners remembers on which node the owners (driver and worker processes)
// of the objects this node holds live, so that when a node dies the
// objects its processes owned here are freed: nobody is left to release
// them. It is shared by the gateway actor (tasks other nodes send) and the
// fetcher (copies it pulls); mu guards the maps and is a leaf.
//
// It is bounded: an owner goes when its process exits (the gateway hears
// OwnersExited) or its node dies, and past max entries the oldest is
// forgotten (only entries whose exit notice was lost should ever get
// there; DefaultMaxOwners).
type owners struct {
	mu      sync.Mutex
	byNode  map[ids.NodeID]map[ids.WorkerID]struct{}
	order   *fifoSet[ownerKey]
	max     int
	evicted uint64
	log     *slog.Logger
}

type ownerKey struct {
	node   ids.NodeID
	worker ids.WorkerID
}

func newOwners(max int, log *slog.Logger) *owners {
	if log == nil {
		log = slog.Default()
	}
	return &owners{byNode: map[ids.NodeID]map[ids.WorkerID]struct{}{}, order: newFIFOSet[ownerKey](), max: max, log: log}
}

// record notes that owner (a worker id) lives on ownerNode (hex). Unknown
// or malformed ids are ignored.
func (o *owners) record(owner []byte, ownerNode string) {
	w, err := ids.FromBytes(owner)
	if err != nil || w.IsZero() {
		return
	}
	b, err := hex.DecodeString(ownerNode)
	if err != nil {
		return
	}
	node, err := ids.FromBytes(b)
	if err != nil || node.IsZero() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.order.add(ownerKey{node, w}) {
		return
	}
	set := o.byNode[node]
	if set == nil {
		set = map[ids.WorkerID]struct{}{}
		o.byNode[node] = set
	}
	set[w] = struct{}{}
	for o.order.len() > o.max {
		k, _ := o.order.popOldest()
		o.removeLocked(k)
		o.evicted++
		if o.evicted == 1 || o.evicted%1024 == 0 {
			o.log.Warn("cluster: owner table full: forgetting the oldest owners (exit notices were lost?); their objects here are not freed if their node dies",
				"max", o.max, "evicted", o.evicted)
		}
	}
}

func (o *owners) removeLocked(k ownerKey) {
	set := o.byNode[k.node]
	delete(set, k.worker)
	if len(set) == 0 {
		delete(o.byNode, k.node)
	}
}

// forget removes and returns the owners that lived on node.
func (o *owners) forget(node ids.NodeID) []ids.WorkerID {
	o.mu.Lock()
	defer o.mu.Unlock()
	set := o.byNode[node]
	delete(o.byNode, node)
	out := make([]ids.WorkerID, 0, len(set))
	for w := range set {
		out = append(out, w)
		o.order.remove(ownerKey{node, w})
	}
	return out
}

// exited removes one owner whose process exited; it reports whether it
// was recorded.
func (o *owners) exited(node ids.NodeID, w ids.WorkerID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.order.remove(ownerKey{node, w}) {
		return false
	}
	o.removeLocked(ownerKey{node, w})
	return true
}

// sizes returns the owners recorded and the nodes they live on.
func (o *owners) sizes() (owners, nodes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.order.len(), len(o.byNode)
}

// nodeOf returns the node owner lives on, if recorded. It costs
// O(owner nodes).
func (o *owners) nodeOf(w ids.WorkerID) (ids.NodeID, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for node, set := range o.byNode {
		if _, ok := set[w]; ok {
			return node, true
		}
	}
	return ids.NodeID{}, false
}
