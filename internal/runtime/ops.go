package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/memsample"
)

// What the ops and chaos calls (package atolltest) do through a runtime:
// read its state, break its node or others on purpose.

// Memory returns the node's store statistics and this process's owner
// table's.
func (rt *Runtime) Memory(ctx context.Context) (*atollpb.StoreStats, owner.Stats, error) {
	s, err := rt.store.Stats(ctx)
	if err != nil {
		return nil, owner.Stats{}, err
	}
	return s, rt.owner.stats(), nil
}

// Status asks the driver's raylet for its state.
func (d *Driver) Status(ctx context.Context) (*raylet.State, error) {
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := d.system.Root.RequestFuture(d.node.Raylet(), &raylet.GetState{}, timeout).Result()
	if err != nil {
		return nil, errs.Unavailablef("raylet did not answer: %v", err)
	}
	return res.(*raylet.State), nil
}

// FailNextCreates makes the node's object store fail its next n
// creations with ObjectStoreFullError.
func (d *Driver) FailNextCreates(n int) error {
	if n < 0 {
		return errs.Invalidf("FailNextCreates(%d): negative", n)
	}
	d.system.Root.Send(d.node.Store(), &objectstore.FailCreates{N: n})
	return nil
}

// KillNode kills another node of the driver's cluster as if its machine
// failed (atolltest.KillNode).
func (d *Driver) KillNode(ctx context.Context, nodeID string) error {
	g, id, err := d.peerNode("KillNode", nodeID)
	if err != nil {
		return err
	}
	return g.KillNode(ctx, id)
}

// PartitionNode cuts another node of the driver's cluster off the others
// for dur in dir (atolltest.PartitionNode).
func (d *Driver) PartitionNode(ctx context.Context, nodeID string, dir faultplan.Direction, dur time.Duration) error {
	g, id, err := d.peerNode("PartitionNode", nodeID)
	if err != nil {
		return err
	}
	return g.PartitionNode(ctx, id, string(dir), dur)
}

// peerNode finds the gateway and parses the id of another node, for the
// fault calls that act on one.
func (d *Driver) peerNode(what, nodeID string) (*cluster.Gateway, ids.NodeID, error) {
	g, err := d.clusterGateway(what)
	if err != nil {
		return nil, ids.NodeID{}, err
	}
	id, err := ids.FromBytes(unhex(nodeID))
	if err != nil {
		return nil, ids.NodeID{}, errs.Invalidf("%s: bad node id %q", what, nodeID)
	}
	if id == d.nodeID {
		return nil, ids.NodeID{}, errs.Invalidf("%s: %s is the driver's own node", what, id.Short())
	}
	return g, id, nil
}

// AddSampler keeps s until it ends or the driver shuts down, which stops
// it; false if the driver is shutting down already.
func (d *Driver) AddSampler(s *memsample.Sampler) bool { return d.samplers.add(s) }

// RemoveSampler forgets s.
func (d *Driver) RemoveSampler(s *memsample.Sampler) { d.samplers.remove(s) }

// samplerSet holds the samplers started through a driver, for Shutdown to
// stop. Samplers that ended are dropped on the next add.
type samplerSet struct {
	mu     sync.Mutex // a leaf; never held across a sampler's Stop
	closed bool
	set    map[*memsample.Sampler]struct{}
}

// add adds s, unless the set was stopped.
func (ss *samplerSet) add(s *memsample.Sampler) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	for other := range ss.set {
		select {
		case <-other.Done():
			delete(ss.set, other)
		default:
		}
	}
	if ss.set == nil {
		ss.set = map[*memsample.Sampler]struct{}{}
	}
	ss.set[s] = struct{}{}
	return true
}

func (ss *samplerSet) remove(s *memsample.Sampler) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.set, s)
}

// stop stops every sampler and refuses new ones.
func (ss *samplerSet) stop() {
	ss.mu.Lock()
	ss.closed = true
	set := ss.set
	ss.set = nil
	ss.mu.Unlock()
	for s := range set {
		s.Stop()
	}
}
