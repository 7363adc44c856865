package membership

import (
	"encoding/hex"
	"log/slog"
	"sync"

	"github.com/hashicorp/memberlist"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Node metadata on the wire is a one-byte header followed by Config.Meta.
const (
	metaHeaderLen = 1
	flagLeaving   = 1 << 0 // set by Leave just before memberlist's leave
)

func encodeMeta(flags byte, meta []byte) []byte {
	b := make([]byte, 0, metaHeaderLen+len(meta))
	return append(append(b, flags), meta...)
}

// decodeMeta splits wire metadata; a node that is not an atoll member (empty
// metadata) decodes as no flags and no metadata.
func decodeMeta(b []byte) (flags byte, meta []byte) {
	if len(b) < metaHeaderLen {
		return 0, nil
	}
	return b[0], clone(b[metaHeaderLen:])
}

// delegates implements memberlist.EventDelegate and memberlist.Delegate.
// Memberlist calls them with its node lock held: every method copies what it
// needs and returns without blocking.
type delegates struct {
	self string // our memberlist node name
	log  *slog.Logger

	mu    sync.Mutex
	meta  []byte  // wire metadata of the local node (header included)
	sinks []*sink // subscribers; push never blocks
	// peers are the live peers as the events left them (Members' copy:
	// memberlist's own node structs change under its lock after
	// Memberlist.Members returns them).
	peers map[ids.NodeID]Node
}

var (
	_ memberlist.EventDelegate = (*delegates)(nil)
	_ memberlist.Delegate      = (*delegates)(nil)
)

func (d *delegates) publish(e Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.sinks {
		s.push(e)
	}
}

func (d *delegates) addSink(s *sink) {
	d.mu.Lock()
	d.sinks = append(d.sinks, s)
	d.mu.Unlock()
}

// removeSink unregisters s; it reports whether s was registered.
func (d *delegates) removeSink(s *sink) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, x := range d.sinks {
		if x == s {
			d.sinks = append(d.sinks[:i:i], d.sinks[i+1:]...)
			return true
		}
	}
	return false
}

func (d *delegates) takeSinks() []*sink {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sinks
	d.sinks = nil
	return s
}

// nodeID parses a peer's node name; it reports false for the local node and
// for names that are not atoll node ids.
func (d *delegates) nodeID(n *memberlist.Node) (ids.NodeID, bool) {
	if n.Name == d.self {
		return ids.NodeID{}, false
	}
	id, ok := parseNodeID(n.Name)
	if !ok {
		d.log.Debug("membership: ignoring non-atoll member", "name", n.Name)
	}
	return id, ok
}

// parseNodeID parses a memberlist node name written by ids.NodeID.String.
func parseNodeID(name string) (ids.NodeID, bool) {
	b, err := hex.DecodeString(name)
	if err != nil || len(b) != ids.Len16 {
		return ids.NodeID{}, false
	}
	return ids.MustFromBytes(b), true
}

// NotifyJoin implements memberlist.EventDelegate.
func (d *delegates) NotifyJoin(n *memberlist.Node) {
	id, ok := d.nodeID(n)
	if !ok {
		return
	}
	_, meta := decodeMeta(n.Meta)
	d.setPeer(Node{ID: id, Addr: n.Address(), Meta: meta})
	d.publish(NodeJoined{ID: id, Addr: n.Address(), Meta: meta})
}

// setPeer records a live peer; a nil meta keeps the one recorded.
func (d *delegates) setPeer(n Node) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.peers == nil {
		d.peers = map[ids.NodeID]Node{}
	}
	if n.Meta == nil {
		n.Meta = d.peers[n.ID].Meta
	}
	d.peers[n.ID] = n
}

// livePeers copies the live peers.
func (d *delegates) livePeers() []Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Node, 0, len(d.peers))
	for _, n := range d.peers {
		out = append(out, Node{ID: n.ID, Addr: n.Addr, Meta: clone(n.Meta)})
	}
	return out
}

// NotifyLeave implements memberlist.EventDelegate. n.State is not usable
// (memberlist v0.7.0 leaves it StateAlive); the leaving flag in the last
// metadata seen tells a graceful leave from a failure.
func (d *delegates) NotifyLeave(n *memberlist.Node) {
	id, ok := d.nodeID(n)
	if !ok {
		return
	}
	flags, _ := decodeMeta(n.Meta)
	dead := flags&flagLeaving == 0 && n.State != memberlist.StateLeft
	d.mu.Lock()
	delete(d.peers, id)
	d.mu.Unlock()
	d.publish(NodeLeft{ID: id, Addr: n.Address(), Dead: dead})
}

// NotifyUpdate implements memberlist.EventDelegate. The metadata update
// that announces a leave is not reported; the NodeLeft follows.
func (d *delegates) NotifyUpdate(n *memberlist.Node) {
	id, ok := d.nodeID(n)
	if !ok {
		return
	}
	flags, meta := decodeMeta(n.Meta)
	if flags&flagLeaving != 0 {
		d.setPeer(Node{ID: id, Addr: n.Address()}) // its last meta stays
		return
	}
	d.setPeer(Node{ID: id, Addr: n.Address(), Meta: meta})
	d.publish(NodeUpdated{ID: id, Addr: n.Address(), Meta: meta})
}

// NodeMeta implements memberlist.Delegate.
func (d *delegates) NodeMeta(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.meta) > limit {
		// Unreachable: Config.validate and UpdateMeta enforce MaxMetaSize.
		return d.meta[:limit]
	}
	return clone(d.meta)
}

func (d *delegates) setMeta(m []byte) {
	d.mu.Lock()
	d.meta = m
	d.mu.Unlock()
}

// NotifyMsg implements memberlist.Delegate; atoll sends no user messages.
func (d *delegates) NotifyMsg([]byte) {}

// GetBroadcasts implements memberlist.Delegate.
func (d *delegates) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState implements memberlist.Delegate.
func (d *delegates) LocalState(join bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate.
func (d *delegates) MergeRemoteState(buf []byte, join bool) {}
