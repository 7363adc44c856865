package cluster

import (
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The node's load report: what its raylet and store say, published
// every tick, and a last one marked leaving when the node stops.

// report publishes the node's load every ReportInterval until Stop.
//
// The raylet's and the store's state are asked for with one long-lived
// collector actor as the sender, not a future per request: every future
// is a new PID in protoactor's process registry (1024×32 Go maps, which
// allocate a table the first time a PID lands in them and never shrink),
// and 20 futures a second would make an idle node's heap creep for hours.
func (g *Gateway) report(info *atollpb.NodeInfo) {
	defer close(g.repDone)
	c := g.cfg
	replies := make(chan any, 8)
	collector := c.System.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *raylet.State, *atollpb.StoreStats:
			select {
			case replies <- m:
			default: // a late reply the loop gave up on
			}
		}
	}))
	defer c.System.Root.Stop(collector)
	tick := time.NewTicker(c.ReportInterval)
	defer tick.Stop()
	subject := loadSubject(c.Prefix, c.NodeID)
	var seq uint64
	host, _ := os.Hostname()
	for {
		seq++
		load := &atollpb.NodeLoad{NodeId: c.NodeID.Bytes(), TransferAddress: g.server.Addr(), IsDriver: info.IsDriver,
			IsHead: info.IsHead, Hostname: host, Seq: seq, NodeType: info.NodeType, FreeSeq: g.freeSeq.Load()}
		g.collect(load, collector, replies)
		load.Pulls, load.PulledBytes = g.Pulls()
		load.Draining = g.drain.draining.Load()
		g.drain.queued.Store(load.Queued)
		g.drain.running.Store(load.Running)
		select {
		case <-g.stopRep:
			load.Leaving = true
			if b, err := proto.Marshal(load); err == nil {
				_ = c.Conn.Publish(subject, b)
			}
			return
		default:
		}
		if load.Total != nil {
			if b, err := proto.Marshal(load); err == nil {
				_ = c.Conn.Publish(subject, b)
			}
		}
		select {
		case <-tick.C:
		case <-g.stopRep:
		}
	}
}

// collect asks the raylet and the store for their state, with collector
// as the sender, and fills load with their replies (waiting at most a
// second; stale replies of an earlier round are dropped first).
func (g *Gateway) collect(load *atollpb.NodeLoad, collector *actor.PID, replies chan any) {
	root := g.cfg.System.Root
	for len(replies) > 0 {
		<-replies
	}
	root.RequestWithCustomSender(g.cfg.Raylet, &raylet.GetState{}, collector)
	root.RequestWithCustomSender(g.cfg.Store, &atollpb.StoreStatsRequest{}, collector)
	timeout := time.NewTimer(time.Second)
	defer timeout.Stop()
	for got := 0; got < 2; got++ {
		select {
		case m := <-replies:
			switch st := m.(type) {
			case *raylet.State:
				load.Total, load.Available = st.Total, st.Available
				load.Queued, load.Running, load.QueuedCpu = int32(st.Queued), int32(st.Running), st.QueuedCPU
				load.Bundles, load.Demands, load.Actors = st.Bundles, st.Demands, int32(st.Actors)
			case *atollpb.StoreStats:
				load.StoreUsed, load.StoreCapacity, load.Store = st.UsedBytes, st.CapacityBytes, st
			}
		case <-timeout.C:
			return
		}
	}
}
