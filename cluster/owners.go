package cluster

import (
	"encoding/hex"
	"sync"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// owners remembers on which node the owners (driver and worker processes)
// of the objects this node holds live, so that when a node dies the
// objects its processes owned here are freed: nobody is left to release
// them. It is shared by the gateway actor (tasks other nodes send) and the
// fetcher (copies it pulls); mu guards the map and is a leaf.
type owners struct {
	mu     sync.Mutex
	byNode map[ids.NodeID]map[ids.WorkerID]struct{}
}

func newOwners() *owners { return &owners{byNode: map[ids.NodeID]map[ids.WorkerID]struct{}{}} }

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
	set := o.byNode[node]
	if set == nil {
		set = map[ids.WorkerID]struct{}{}
		o.byNode[node] = set
	}
	set[w] = struct{}{}
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
	}
	return out
}
