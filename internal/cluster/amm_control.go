package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Control of the head's Active Memory Manager from drivers and the CLI:
// start and stop its policies (atoll.amm.control), ask for its status,
// and drain a node (atoll.amm.drain). The AMM always runs on the head;
// stopped, it runs no policy, but a drain still moves the draining
// node's objects (RetireNode runs whenever a node is retiring).

// drainListLimit bounds the objects the AMM lists of a draining node (and
// a node may leave only with at most that many objects in its store). A
// NodeObjects of that many holdings stays well below NATS's 1 MiB payload.
const drainListLimit = 8192

// maxDrainsKept bounds the finished drains the status remembers.
const maxDrainsKept = 16

// drainInfo is one drain the AMM runs.
type drainInfo struct {
	node  amm.NodeID
	start time.Time
	// From the last round.
	objectsLeft     int
	bytesLeft       uint64
	queued, running int32
	state           string
	done            bool // the node left
	doneAt          time.Time
}

// DrainCounting is a drain's state until the AMM's first round has
// counted the node's objects (its counts are 0 until then, not "nothing
// to move").
const DrainCounting = "counting objects"

func (d *drainInfo) proto() *atollpb.DrainStatus {
	b, _ := hex.DecodeString(string(d.node))
	return &atollpb.DrainStatus{NodeId: b, StartUnixMs: d.start.UnixMilli(), ObjectsLeft: int32(d.objectsLeft),
		BytesLeft: d.bytesLeft, Queued: d.queued, Running: d.running, State: d.state}
}

// Enabled reports whether the AMM's policies run.
func (a *AMM) Enabled() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.enabled
}

// SetEnabled starts (true) or stops (false) the AMM's policies; a drain
// goes on either way.
func (a *AMM) SetEnabled(on bool) {
	a.mu.Lock()
	changed := a.enabled != on
	a.enabled = on
	a.mu.Unlock()
	if changed {
		a.cfg.Logger.Info("amm: policies "+map[bool]string{true: "started", false: "stopped"}[on], "interval", a.cfg.Interval)
	}
}

// Status is the AMM's state as AMMStatus reports it.
func (a *AMM) Status() *atollpb.AMMStatus {
	st := a.Stats()
	out := &atollpb.AMMStatus{IntervalMs: a.cfg.Interval.Milliseconds(), Rounds: st.Rounds, Nodes: int32(st.Nodes),
		Objects: int32(st.Objects), Copies: int32(st.Copies), Dropped: st.Dropped, Replicated: st.Replicated,
		ReplicasNoFit: st.ReplicasNoFit, ReplicateFailed: st.ReplicateFailed, Tracked: int32(st.Tracked), Refused: st.Refused, Moved: st.Moved}
	for _, p := range a.cfg.Policies {
		out.Policies = append(out.Policies, p.Name())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out.Enabled = a.enabled
	for _, d := range a.drainList() {
		out.Drains = append(out.Drains, d.proto())
	}
	return out
}

// drainList returns the drains, oldest first. a.mu is held.
func (a *AMM) drainList() []*drainInfo {
	out := make([]*drainInfo, 0, len(a.drains))
	for _, d := range a.drains {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y *drainInfo) int { return x.start.Compare(y.start) })
	return out
}

// Drain starts draining node (hex or raw id checks happen here): the node
// must be alive, neither the head nor a driver's. It returns once the node
// stopped taking new work; the AMM's rounds then move its objects and
// tell it to leave.
func (a *AMM) Drain(ctx context.Context, node ids.NodeID) error { return a.drain(ctx, node, false) }

// DrainIfIdle drains node as Drain does, but only if it is idle when the
// request reaches it (no queued or running tasks, actors or
// placement-group bundles): a busy node stays as it was and the error,
// ErrUnavailable, says why. It is the autoscaler's drain of a node it
// saw idle in a load report that may be older than the node's last task.
func (a *AMM) DrainIfIdle(ctx context.Context, node ids.NodeID) error {
	return a.drain(ctx, node, true)
}

func (a *AMM) drain(ctx context.Context, node ids.NodeID, ifIdle bool) error {
	nodes, err := a.cfg.GCS.ListNodes(ctx)
	if err != nil {
		return errs.Unavailablef("drain: list the nodes: %v", err)
	}
	i := slices.IndexFunc(nodes, func(n *atollpb.NodeInfo) bool { return string(n.NodeId) == string(node.Bytes()) })
	switch {
	case i < 0:
		return errs.NotFoundf("drain: node %s is not in the cluster", node.Short())
	case nodes[i].State != atollpb.NodeState_NODE_ALIVE:
		return errs.NotFoundf("drain: node %s is dead", node.Short())
	case nodes[i].IsHead:
		return errs.Invalidf("drain: node %s is the head (it runs the GCS and the control plane); stop the cluster instead", node.Short())
	case nodes[i].IsDriver:
		return errs.Invalidf("drain: node %s is a driver's node (it goes with its driver)", node.Short())
	}
	if err := askDrain(a.cfg.Conn, a.cfg.Prefix, node, ifIdle, a.cfg.RequestTimeout); err != nil {
		return err
	}
	id := amm.NodeID(node.String())
	a.mu.Lock()
	defer a.mu.Unlock()
	if d := a.drains[id]; d == nil || d.done {
		a.drains[id] = &drainInfo{node: id, start: time.Now(), state: DrainCounting}
		a.pruneDrains()
	}
	a.cfg.Logger.Info("amm: draining node", "node", node.Short())
	return nil
}

// pruneDrains forgets the oldest finished drains past maxDrainsKept.
// a.mu is held.
func (a *AMM) pruneDrains() {
	var done []*drainInfo
	for _, d := range a.drains {
		if d.done {
			done = append(done, d)
		}
	}
	slices.SortFunc(done, func(x, y *drainInfo) int { return x.doneAt.Compare(y.doneAt) })
	for len(done) > maxDrainsKept {
		delete(a.drains, done[0].node)
		done = done[1:]
	}
}

// activeDrains reports whether a drain is under way.
func (a *AMM) activeDrains() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range a.drains {
		if !d.done {
			return true
		}
	}
	return false
}

// roundPolicies are the policies of one round: the configured ones when
// the AMM is enabled, with RetireNode first when a node is retiring (and
// RetireNode alone when the AMM is stopped).
func (a *AMM) roundPolicies(s *amm.Snapshot) []amm.Policy {
	retiring := false
	for _, n := range s.Nodes {
		retiring = retiring || n.Retiring
	}
	enabled := a.Enabled()
	var out []amm.Policy
	if retiring && !slices.ContainsFunc(a.cfg.Policies, func(p amm.Policy) bool { return p.Name() == (amm.RetireNode{}).Name() }) {
		out = append(out, amm.RetireNode{})
	}
	if enabled {
		out = append(out, a.cfg.Policies...)
	}
	return out
}

// drainStep, after a round's enactment, updates each draining node's
// progress and asks those that are ready to leave. A node is ready when,
// in the round's snapshot, every object of its store had a complete copy
// on a node that is not retiring (one this round did not drop) and its
// raylet was idle; the node checks again (idle, nothing new in its store)
// before it leaves.
func (a *AMM) drainStep(m *ammGathered, drops []amm.Suggestion) {
	a.mu.Lock()
	var active []*drainInfo
	for _, d := range a.drains {
		if !d.done {
			active = append(active, d)
		}
	}
	a.mu.Unlock()
	if len(active) == 0 || m.alive == nil {
		return // no drain, or the GCS did not list the nodes
	}
	dropped := map[amm.ObjectID]bool{}
	for _, d := range drops {
		if n := m.snap.Nodes[d.Node]; n != nil && !n.Retiring {
			dropped[d.Object] = true
		}
	}
	for _, d := range active {
		n := m.snap.Nodes[d.node]
		if n == nil {
			a.finishDrain(d, m.alive[d.node])
			continue
		}
		var left int
		var leftBytes uint64
		var held [][]byte
		for _, o := range m.snap.Objects {
			if _, ok := o.Copy(d.node); !ok {
				continue
			}
			if b, err := hex.DecodeString(string(o.ID)); err == nil {
				held = append(held, b)
			}
			if !safeElsewhere(m.snap, o) || dropped[o.ID] {
				left++
				leftBytes += o.Size
			}
		}
		info := m.drainInfo[d.node]
		state := "moving objects"
		switch {
		case info.truncated:
			state = "waiting: more objects in its store than a drain lists"
		case left > 0:
		case info.queued+info.running > 0:
			state = "waiting for its tasks"
		default:
			state = "leaving"
		}
		if state == "leaving" {
			if busy := a.askLeave(d.node, held); busy != "" {
				state = "waiting: " + busy
			}
		}
		a.mu.Lock()
		d.objectsLeft, d.bytesLeft, d.queued, d.running, d.state = left, leftBytes, info.queued, info.running, state
		a.mu.Unlock()
	}
}

// SafeElsewhere is the drain's leave rule for one object (see
// drainStep): o has a complete copy on a node of the snapshot that is not
// retiring. Exported for harnesses that play the AMM's drain step.
func SafeElsewhere(s *amm.Snapshot, o *amm.Object) bool { return safeElsewhere(s, o) }

// safeElsewhere reports whether o has a complete copy on a node of the
// snapshot that is not retiring.
func safeElsewhere(s *amm.Snapshot, o *amm.Object) bool {
	for _, c := range o.Copies {
		if n := s.Nodes[c.Node]; n != nil && !n.Retiring && !c.Pulling {
			return true
		}
	}
	return false
}

// finishDrain records that a draining node is gone from the snapshot:
// left (the GCS no longer lists it alive) or, if it is alive but did not
// answer, nothing yet.
func (a *AMM) finishDrain(d *drainInfo, alive bool) {
	if alive {
		a.mu.Lock()
		d.state = "waiting: the node did not answer"
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d.done, d.doneAt, d.state = true, time.Now(), "left"
	d.objectsLeft, d.bytesLeft, d.queued, d.running = 0, 0, 0, 0
	a.pruneDrains()
	a.cfg.Logger.Info("amm: drained node left the cluster", "node", string(d.node)[:8], "took", time.Since(d.start).Round(time.Millisecond))
}

// askLeave asks a drained node to leave; it returns why it stays ("" if
// it leaves).
func (a *AMM) askLeave(node amm.NodeID, held [][]byte) string {
	id, err := nodeIDFromHex(string(node))
	if err != nil {
		return "bad node id"
	}
	b, _ := proto.Marshal(&atollpb.LeaveRequest{ObjectIds: held})
	msg, err := a.cfg.Conn.Request(nodeSubject(a.cfg.Prefix, id, "leave"), b, a.cfg.RequestTimeout)
	if err != nil {
		return "leave request: " + err.Error()
	}
	var reply atollpb.LeaveReply
	if err := proto.Unmarshal(msg.Data, &reply); err != nil {
		return "undecodable leave reply"
	}
	return reply.Busy
}

// serveControl answers an AMMControl request.
func (a *AMM) serveControl(m *nats.Msg) {
	var req atollpb.AMMControl
	var st *atollpb.AMMStatus
	if err := proto.Unmarshal(m.Data, &req); err != nil {
		st = &atollpb.AMMStatus{Error: errs.ToProto(errs.Invalidf("amm control: undecodable request"))}
	} else {
		switch req.Op {
		case atollpb.AMMControl_START:
			a.SetEnabled(true)
		case atollpb.AMMControl_STOP:
			a.SetEnabled(false)
		case atollpb.AMMControl_STATUS:
		default:
			st = &atollpb.AMMStatus{Error: errs.ToProto(errs.Invalidf("amm control: unknown op %d", req.Op))}
		}
	}
	if st == nil {
		st = a.Status()
	}
	b, _ := proto.Marshal(st)
	_ = m.Respond(b)
}

// serveDrain answers a DrainRequest from a driver or the CLI.
func (a *AMM) serveDrain(m *nats.Msg) {
	go func() {
		var req atollpb.DrainRequest
		var err error
		if proto.Unmarshal(m.Data, &req) != nil {
			err = errs.Invalidf("drain: undecodable request")
		} else if node, e := ids.FromBytes(req.NodeId); e != nil || node.IsZero() {
			err = errs.Invalidf("drain: bad node id %x", req.NodeId)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 2*a.cfg.RequestTimeout)
			err = a.Drain(ctx, node)
			cancel()
		}
		var reply atollpb.DrainReply
		if err != nil {
			reply.Error = errs.ToProto(err)
		}
		b, _ := proto.Marshal(&reply)
		_ = m.Respond(b)
	}()
}

// AMMClient talks to the head's Active Memory Manager over a NATS
// connection (a driver's node or the CLI).
type AMMClient struct {
	Conn *nats.Conn
	// Prefix starts the subjects; default DefaultPrefix.
	Prefix string
	// Timeout bounds each request; default 10 s.
	Timeout time.Duration
}

func (c *AMMClient) prefix() string {
	if c.Prefix == "" {
		return DefaultPrefix
	}
	return c.Prefix
}

// Control starts (atollpb.AMMControl_START), stops or only reads (STATUS)
// the AMM and returns its status.
func (c *AMMClient) Control(ctx context.Context, op atollpb.AMMControl_Op) (*atollpb.AMMStatus, error) {
	b, _ := proto.Marshal(&atollpb.AMMControl{Op: op})
	var st atollpb.AMMStatus
	if err := c.request(ctx, "amm control", ammControlSubject(c.prefix()), b, &st); err != nil {
		return nil, err
	}
	if st.Error != nil {
		return nil, errs.FromProto(st.Error)
	}
	return &st, nil
}

// SetReplicas asks the AMM to keep n copies of object (amm.AllNodes: one
// on every node; 0: stop tracking).
func (c *AMMClient) SetReplicas(ctx context.Context, object ids.ObjectID, n int) error {
	if n < amm.AllNodes || n > maxReplicaCount {
		return errs.Invalidf("SetReplicas: count %d: want 0..%d or %d (every node)", n, maxReplicaCount, amm.AllNodes)
	}
	b, _ := proto.Marshal(&atollpb.SetReplicas{ObjectId: object.Bytes(), Replicas: int32(n)})
	var reply atollpb.SetReplicasReply
	if err := c.request(ctx, "SetReplicas", ammReplicasSubject(c.prefix()), b, &reply); err != nil {
		return err
	}
	return errs.FromProto(reply.Error)
}

// Drain asks the head to drain node; it fails with the head's typed error
// (not found, the head itself, a driver's node) or ErrUnavailable.
func (c *AMMClient) Drain(ctx context.Context, node ids.NodeID) error {
	b, _ := proto.Marshal(&atollpb.DrainRequest{NodeId: node.Bytes()})
	var reply atollpb.DrainReply
	if err := c.request(ctx, "drain", ammDrainSubject(c.prefix()), b, &reply); err != nil {
		return err
	}
	return errs.FromProto(reply.Error)
}

// request sends body to the head's AMM on subject and decodes its reply,
// within ctx (and Timeout, default 10 s, when ctx has no deadline).
func (c *AMMClient) request(ctx context.Context, what, subject string, body []byte, reply proto.Message) error {
	if _, ok := ctx.Deadline(); !ok {
		timeout := c.Timeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	msg, err := c.Conn.RequestWithContext(ctx, subject, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return errs.Unavailablef("%s: no Active Memory Manager answers on the head (an older head?)", what)
		}
		return errs.Unavailablef("%s: the head's Active Memory Manager: %v", what, err)
	}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return errs.Unavailablef("%s: undecodable reply from the head's Active Memory Manager", what)
	}
	return nil
}
