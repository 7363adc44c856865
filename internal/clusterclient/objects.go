package clusterclient

import (
	"cmp"
	"context"
	"encoding/hex"
	"log/slog"
	"slices"
	"sync"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// ObjectInfo is one object in one node's store (a node holding a copy
// pulled from another lists it too, with Copy set).
type ObjectInfo struct {
	NodeID   string `json:"node_id"`
	ObjectID string `json:"object_id"`
	Size     uint64 `json:"size_bytes"`
	// Copy: pulled from another node; the primary is elsewhere.
	Copy bool `json:"copy"`
	// Pinned: a process holds it mapped (reading or writing it).
	Pinned bool `json:"pinned"`
	// Sealed: complete (not sealed: being created or pulled).
	Sealed bool `json:"sealed"`
	// OwnerID is the worker or driver owning the object's references, and
	// OwnerNode its node, where the store knows them ("" otherwise).
	OwnerID   string `json:"owner_id,omitempty"`
	OwnerNode string `json:"owner_node,omitempty"`
	// Driver: the object is in a driver's own store.
	Driver bool `json:"driver"`
}

// ObjectListing is what ListObjectsOn found: the objects, largest first,
// and the nodes whose list was cut at the limit (their smallest objects
// are missing) or that did not answer.
type ObjectListing struct {
	Objects    []ObjectInfo `json:"objects"`
	Truncated  []string     `json:"truncated_nodes,omitempty"`
	Unanswered []string     `json:"unanswered_nodes,omitempty"`
}

// ListObjectsOn asks every live node for the objects in its store, at most
// limit per node (0: each store's default, 4096), largest first.
func ListObjectsOn(ctx context.Context, nc *nats.Conn, limit uint32) (*ObjectListing, error) {
	body, err := proto.Marshal(&atollpb.ListObjectsRequest{Limit: limit})
	if err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		out      ObjectListing
		answered = map[string]bool{}
	)
	asked, err := askLiveNodes(ctx, nc, cluster.ObjectsSubject, body, func(node ids.NodeID, _ *atollpb.NodeInfo, data []byte) {
		var r atollpb.NodeObjects
		if err := proto.Unmarshal(data, &r); err != nil {
			slog.Debug("atoll list objects: bad answer", "node", node.String(), "err", err)
			return
		}
		if err := cluster.ValidNodeObjects(&r, node); err != nil {
			slog.Debug("atoll list objects: bad answer", "node", node.String(), "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		answered[node.String()] = true
		if r.List.Truncated {
			out.Truncated = append(out.Truncated, node.String())
		}
		for i, h := range r.List.Objects {
			o := ObjectInfo{NodeID: node.String(), ObjectID: hex.EncodeToString(h.ObjectId), Size: h.Size,
				Copy: h.Copy, Pinned: h.Pinned, Sealed: h.Sealed, Driver: r.IsDriver}
			if owner, err := ids.FromBytes(h.OwnerId); err == nil && !owner.IsZero() {
				o.OwnerID = owner.String()
			}
			if len(r.OwnerNodes) > 0 {
				o.OwnerNode = r.OwnerNodes[i]
			}
			out.Objects = append(out.Objects, o)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, n := range asked {
		if !answered[n.String()] {
			out.Unanswered = append(out.Unanswered, n.String())
		}
	}
	slices.Sort(out.Truncated)
	slices.Sort(out.Unanswered)
	slices.SortStableFunc(out.Objects, func(a, b ObjectInfo) int {
		return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.ObjectID, b.ObjectID), cmp.Compare(a.NodeID, b.NodeID))
	})
	return &out, nil
}
