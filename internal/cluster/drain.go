package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The node's side of a drain (`atoll drain NODE`, RetireNode). The head's
// AMM asks the node to drain (atoll.node.<node>.drain): from then on its
// raylet places new tasks on other nodes, its load reports say draining
// (so the other raylets leave it out of their placement view) and its
// inventories too (so the AMM's RetireNode policy moves its objects). When
// every object of its store has a copy elsewhere, the AMM asks it to
// leave (atoll.node.<node>.leave) with the list of those objects; the
// node leaves only if its raylet is idle and it holds nothing else, and
// then closes Left: the node process stops as on SIGTERM.

// drainState is the gateway's part of a drain; its fields are read by the
// report goroutine and the NATS callbacks.
type drainState struct {
	draining         atomic.Bool
	queued, running  atomic.Int32 // the raylet's, from the latest load report
	left             chan struct{}
	leaveOnce        sync.Once
	leaveRequestBusy atomic.Bool // a leave request is being checked
}

// maxLeaveObjects bounds the object ids of a leave request (the AMM lists
// at most drainListLimit objects of a draining node).
const maxLeaveObjects = drainListLimit

// Draining reports whether the node is being drained.
func (g *Gateway) Draining() bool { return g.drain.draining.Load() }

// Left is closed when the node, drained, was told to leave the cluster:
// its process should stop (node.Node.Stop) and exit.
func (g *Gateway) Left() <-chan struct{} { return g.drain.left }

// serveDrain answers a drain request from the head: the node stops taking
// new work.
func (g *Gateway) serveDrain(m *nats.Msg) {
	var req atollpb.DrainRequest
	var err error
	switch {
	case proto.Unmarshal(m.Data, &req) != nil:
		err = errs.Invalidf("drain: undecodable request")
	case !bytes.Equal(req.NodeId, g.cfg.NodeID.Bytes()):
		err = errs.Invalidf("drain: request for another node")
	case g.cfg.Node.GetIsHead():
		err = errs.Invalidf("drain: node %s is the head (it runs the GCS and the control plane)", g.cfg.NodeID.Short())
	case g.cfg.Node.GetIsDriver():
		err = errs.Invalidf("drain: node %s is a driver's node", g.cfg.NodeID.Short())
	}
	respond := func(reply *atollpb.DrainReply) {
		b, _ := proto.Marshal(reply)
		_ = m.Respond(b)
	}
	switch {
	case err != nil:
		g.cfg.Logger.Warn("cluster: drain request refused", "err", err)
		respond(&atollpb.DrainReply{Error: errs.ToProto(err)})
	case req.IfIdle && !g.drain.draining.Load():
		// The raylet checks that it is idle and stops taking work in one
		// step; the NATS callback does not wait for it.
		go func() {
			busy := make(chan string, 1)
			g.cfg.System.Root.Send(g.cfg.Raylet, &raylet.Drain{IfIdle: true, Reply: func(b string) { busy <- b }})
			select {
			case b := <-busy:
				if b == "" {
					g.startDrain()
				}
				respond(&atollpb.DrainReply{Busy: b})
			case <-time.After(storeAsk):
				respond(&atollpb.DrainReply{Error: errs.ToProto(errs.Unavailablef("drain: node %s: the raylet did not answer", g.cfg.NodeID.Short()))})
			}
		}()
	default:
		g.startDrain()
		g.cfg.System.Root.Send(g.cfg.Raylet, &raylet.Drain{})
		respond(&atollpb.DrainReply{})
	}
}

// startDrain marks the node draining (its load reports and inventories
// say so from now on).
func (g *Gateway) startDrain() {
	if !g.drain.draining.Swap(true) {
		g.cfg.Logger.Info("cluster: draining: no new work; the head's AMM moves this node's objects, then the node leaves", "node", g.cfg.NodeID.Short())
	}
}

// serveLeave answers the AMM's leave request: the node leaves if it is
// draining, idle and holds only objects the AMM listed as copied
// elsewhere; otherwise it says why it stays.
func (g *Gateway) serveLeave(m *nats.Msg) {
	respond := func(busy string) {
		b, _ := proto.Marshal(&atollpb.LeaveReply{Busy: busy})
		_ = m.Respond(b)
	}
	var req atollpb.LeaveRequest
	if err := proto.Unmarshal(m.Data, &req); err != nil || len(req.ObjectIds) > maxLeaveObjects {
		g.cfg.Logger.Warn("cluster: bad leave request dropped", "ids", len(req.ObjectIds))
		respond("bad request")
		return
	}
	if !g.drain.draining.Load() {
		respond("not draining")
		return
	}
	if g.drain.leaveRequestBusy.Swap(true) {
		respond("a leave request is being checked")
		return
	}
	go func() {
		defer g.drain.leaveRequestBusy.Store(false)
		busy := g.checkLeave(req.ObjectIds)
		respond(busy)
		if busy == "" {
			g.drain.leaveOnce.Do(func() {
				g.cfg.Logger.Info("cluster: drained: leaving the cluster", "node", g.cfg.NodeID.Short())
				close(g.drain.left)
			})
		}
	}()
}

// checkLeave returns why the node cannot leave yet ("" if it can).
func (g *Gateway) checkLeave(safe [][]byte) string {
	root := g.cfg.System.Root
	res, err := root.RequestFuture(g.cfg.Raylet, &raylet.GetState{}, storeAsk).Result()
	if err != nil {
		return "raylet: " + err.Error()
	}
	st := res.(*raylet.State)
	if st.Queued+st.Running > 0 {
		return fmt.Sprintf("%d tasks queued, %d running", st.Queued, st.Running)
	}
	if len(st.Bundles) > 0 {
		// A placement group's reservation: the node stays while it holds
		// one (removed or placed again elsewhere, it is released).
		return fmt.Sprintf("it holds %d placement-group bundles", len(st.Bundles))
	}
	res, err = root.RequestFuture(g.cfg.Store, &atollpb.ListObjectsRequest{Limit: maxLeaveObjects + 1}, storeAsk).Result()
	if err != nil {
		return "store: " + err.Error()
	}
	list, ok := res.(*atollpb.ObjectList)
	if !ok {
		return fmt.Sprintf("store answered %T", res)
	}
	if list.Truncated {
		return fmt.Sprintf("more than %d objects in the store", maxLeaveObjects)
	}
	set := make(map[ids.ObjectID]bool, len(safe))
	for _, b := range safe {
		if id, err := ids.ObjectIDFromBytes(b); err == nil {
			set[id] = true
		}
	}
	for _, h := range list.Objects {
		id, err := ids.ObjectIDFromBytes(h.ObjectId)
		if err != nil || !set[id] {
			return fmt.Sprintf("object %x has no copy on another node yet", h.ObjectId)
		}
	}
	return ""
}

// askDrain tells node to drain (from the head's AMM); ifIdle only if it
// is idle, else the error is ErrUnavailable and says what keeps it busy.
func askDrain(nc *nats.Conn, prefix string, node ids.NodeID, ifIdle bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	reply := &atollpb.DrainReply{}
	if err := askNode(ctx, nc, nodeSubject(prefix, node, "drain"), "drain", node, &atollpb.DrainRequest{NodeId: node.Bytes(), IfIdle: ifIdle}, reply); err != nil {
		return err
	}
	if reply.Busy != "" {
		return errs.Unavailablef("drain: node %s is busy (%s): it stays", node.Short(), reply.Busy)
	}
	return nil
}

// askNode sends req to a node's subject and decodes its reply into
// reply, whose error, if it carries one, is the result. A node that does
// not answer is ErrNotFound (no responders) or ErrUnavailable.
func askNode(ctx context.Context, nc *nats.Conn, subject, what string, node ids.NodeID, req proto.Message,
	reply interface {
		proto.Message
		GetError() *atollpb.ErrorInfo
	}) error {
	b, _ := proto.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, subject, b)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return errs.NotFoundf("%s: node %s does not answer (dead or not in the cluster)", what, node.Short())
		}
		return errs.Unavailablef("%s: node %s: %v", what, node.Short(), err)
	}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return errs.Unavailablef("%s: node %s: undecodable reply", what, node.Short())
	}
	if e := reply.GetError(); e != nil {
		return errs.FromProto(e)
	}
	return nil
}
