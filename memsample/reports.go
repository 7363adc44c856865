package memsample

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

const (
	// reportBuffer is the subscription's channel capacity: reports that
	// find it full are dropped by NATS (the node reports again 100 ms
	// later).
	reportBuffer = 1024
	// listEvery is how often the GCS's node list is read at most.
	listEvery = time.Second
	// listTimeout bounds one ListNodes request.
	listTimeout = 2 * time.Second
	// firstReportsWait bounds Start's wait for the first report of every
	// live node.
	firstReportsWait = 2 * time.Second
)

// report is what a sample needs of a node's latest load report.
type report struct {
	role                    Role
	hostname                string
	used, capacity, spilled uint64
	at                      time.Time // received
}

// clusterSource reads a cluster's load reports. After subscribe only the
// sampler's goroutine uses it.
type clusterSource struct {
	nc   *nats.Conn
	gcs  *gcs.Client
	opts Options
	msgs chan *nats.Msg
	sub  *nats.Subscription

	// latest holds each node's latest report, at most opts.MaxNodes.
	latest map[ids.NodeID]report
	// alive is the GCS's last node list: true for a live node, false for
	// a dead one; a node it did not list yet is missing. nil until the
	// first list.
	alive  map[ids.NodeID]bool
	listed time.Time
	// dropped counts the reports of nodes past opts.MaxNodes.
	dropped uint64
}

func newClusterSource(nc *nats.Conn, opts Options) *clusterSource {
	return &clusterSource{nc: nc, gcs: gcs.NewClient(nc, gcs.ClientOptions{}), opts: opts,
		msgs: make(chan *nats.Msg, reportBuffer), latest: map[ids.NodeID]report{}}
}

func (c *clusterSource) subscribe() error {
	sub, err := c.nc.ChanSubscribe(c.opts.Prefix+".load.*", c.msgs)
	if err != nil {
		return errs.Unavailablef("memsample: subscribe to load reports: %v", err)
	}
	c.sub = sub
	return nil
}

func (c *clusterSource) close() {
	if c.sub != nil {
		_ = c.sub.Unsubscribe()
		c.sub = nil
	}
}

// receive takes one load report, if it is valid.
func (c *clusterSource) receive(m *nats.Msg) {
	log := c.opts.Logger
	var l atollpb.NodeLoad
	if err := proto.Unmarshal(m.Data, &l); err != nil {
		log.Debug("memsample: bad load report", "subject", m.Subject, "err", err)
		return
	}
	id, err := ids.FromBytes(l.NodeId)
	if err != nil {
		log.Debug("memsample: load report without a node id", "subject", m.Subject, "err", err)
		return
	}
	if node, _ := strings.CutPrefix(m.Subject, c.opts.Prefix+".load."); node != id.String() {
		log.Debug("memsample: load report on another node's subject", "subject", m.Subject, "node", id.String())
		return
	}
	if l.Leaving {
		delete(c.latest, id)
		return
	}
	if _, ok := c.latest[id]; !ok && len(c.latest) >= c.opts.MaxNodes {
		c.dropped++
		if c.dropped&(c.dropped-1) == 0 { // 1, 2, 4, 8...
			log.Debug("memsample: too many nodes; reports dropped", "max_nodes", c.opts.MaxNodes, "dropped", c.dropped)
		}
		return
	}
	role := RoleWorker
	switch {
	case l.IsHead:
		role = RoleHead
	case l.IsDriver:
		role = RoleDriver
	}
	c.latest[id] = report{role: role, hostname: l.Hostname, used: l.StoreUsed, capacity: l.StoreCapacity,
		spilled: l.GetStore().GetSpilledBytesCurrent(), at: time.Now()}
}

// drain takes the reports waiting in the channel.
func (c *clusterSource) drain() {
	for {
		select {
		case m := <-c.msgs:
			c.receive(m)
		default:
			return
		}
	}
}

// list reads the GCS's node list (keeping the last one if that fails)
// and forgets the reports of the nodes it lists dead.
func (c *clusterSource) list(ctx context.Context, now time.Time) {
	c.listed = now
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	nodes, err := c.gcs.ListNodes(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			c.opts.Logger.Debug("memsample: list nodes", "err", err)
		}
		return
	}
	alive := make(map[ids.NodeID]bool, len(nodes))
	for _, n := range nodes {
		if id, err := ids.FromBytes(n.NodeId); err == nil {
			alive[id] = n.State == atollpb.NodeState_NODE_ALIVE
		}
	}
	c.alive = alive
	for id := range c.latest {
		if live, listed := alive[id]; listed && !live {
			delete(c.latest, id)
		}
	}
}

// awaitReports lists the nodes and waits until every live one has
// reported, at most firstReportsWait. It returns false if ctx ended.
func (c *clusterSource) awaitReports(ctx context.Context) bool {
	c.list(ctx, time.Now())
	deadline := time.NewTimer(firstReportsWait)
	defer deadline.Stop()
	for !c.allReported() {
		select {
		case m := <-c.msgs:
			c.receive(m)
		case <-deadline.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// allReported: the GCS was listed and every node it lists alive has
// reported.
func (c *clusterSource) allReported() bool {
	if c.alive == nil {
		return false
	}
	for id, live := range c.alive {
		if _, ok := c.latest[id]; live && !ok {
			return false
		}
	}
	return true
}

// read returns the readings of the nodes to sample now: every node with
// a report newer than StaleAfter that the GCS does not list dead, in
// node id order.
func (c *clusterSource) read(ctx context.Context, now time.Time) []Reading {
	c.drain()
	if now.Sub(c.listed) >= listEvery {
		c.list(ctx, now)
	}
	out := make([]Reading, 0, len(c.latest))
	for id, r := range c.latest {
		if now.Sub(r.at) > c.opts.StaleAfter {
			continue
		}
		if live, listed := c.alive[id]; listed && !live {
			continue
		}
		out = append(out, Reading{NodeID: id.String(), Role: r.role, Hostname: r.hostname, Used: r.used, Capacity: r.capacity, Spilled: r.spilled})
	}
	slices.SortFunc(out, func(a, b Reading) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out
}
