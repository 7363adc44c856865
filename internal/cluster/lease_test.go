package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The lease settings of these tests: short, so that they run fast, with
// twenty renewals per lease (ten by default), so that a loaded machine
// does not expire a confirmed attempt.
const (
	testInterval = 50 * time.Millisecond
	testLease    = time.Second
	// leaseSlack is what a loaded two-core machine running -race may add
	// to the expected expiry (lease + one interval).
	leaseSlack = 2 * time.Second
)

// submitted is a task a test node's raylet received from its gateway.
type submitted struct {
	spec  *atollpb.TaskSpec
	reply *actor.PID // the gateway: send the TaskResult here
}

// testNode is one real gateway — its actor and its NATS subscriptions on a
// shared embedded server, in an actor system of its own — with probes for
// its raylet and its store. There is no gossip, GCS or object transfer.
type testNode struct {
	t       testing.TB
	id      ids.NodeID
	system  *actor.ActorSystem
	nc      *nats.Conn
	gw      *Gateway
	submits chan submitted
	// cancels receives the tasks the gateway told the raylet to cancel.
	cancels chan ids.TaskID
	// freed receives the ClientDisconnected messages sent to the store.
	freed chan ids.WorkerID
	// acks receives the generator acks the gateway gave the raylet (those
	// past its buffer are dropped).
	acks chan *atollpb.ForwardGeneratorAck
	// owner collects the results of the work this node forwards.
	owner   *actor.PID
	results chan *atollpb.TaskResult
}

func startNATS(t testing.TB) *natsembed.Server {
	t.Helper()
	ns, err := natsembed.Start(natsembed.Config{Port: natsembed.NoListener, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// startNode starts a gateway on ns; adjust, if set, changes its config.
func startNode(t testing.TB, ns *natsembed.Server, adjust func(*Config)) *testNode {
	t.Helper()
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	n := &testNode{t: t, id: ids.NewNodeID(), system: actors.NewSystem(slog.New(slog.DiscardHandler)), nc: nc,
		submits: make(chan submitted, 64), cancels: make(chan ids.TaskID, 64), freed: make(chan ids.WorkerID, 64), acks: make(chan *atollpb.ForwardGeneratorAck, 64), results: make(chan *atollpb.TaskResult, 64)}
	t.Cleanup(n.system.Shutdown)
	spawn := func(name string, f actor.ReceiveFunc) *actor.PID {
		pid, err := n.system.Root.SpawnNamed(actor.PropsFromFunc(f), name)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	rayletPID := spawn("raylet", func(c actor.Context) {
		switch m := c.Message().(type) {
		case *atollpb.SubmitTask:
			n.submits <- submitted{spec: m.Spec, reply: c.Sender()}
		case *atollpb.CancelTask:
			n.cancels <- ids.MustFromBytes(m.TaskId)
		case *atollpb.ForwardGeneratorAck:
			select {
			case n.acks <- m:
			default:
			}
		case *raylet.GetState:
			c.Respond(&raylet.State{NodeID: n.id})
		}
	})
	storePID := spawn("objectstore", func(c actor.Context) {
		if m, ok := c.Message().(*atollpb.ClientDisconnected); ok {
			n.freed <- ids.MustFromBytes(m.ClientId)
		}
	})
	n.owner = spawn("owner", func(c actor.Context) {
		if r, ok := c.Message().(*atollpb.TaskResult); ok {
			n.results <- r
		}
	})
	cfg := Config{NodeID: n.id, Conn: nc, System: n.system, Raylet: rayletPID, Store: storePID,
		ConfirmInterval: testInterval, ForwardLease: testLease, Logger: slog.New(slog.DiscardHandler)}
	if adjust != nil {
		adjust(&cfg)
	}
	n.gw = New(cfg)
	if n.gw.err != nil {
		t.Fatal(n.gw.err)
	}
	if err := n.gw.startActor(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.gw.Stop("") })
	// Gossip would have every node of the test's NATS server as a member
	// of every other: the gateways keep only members' work.
	testMembers.Lock()
	others := testMembers.of[ns]
	testMembers.of[ns] = append(others, n)
	testMembers.Unlock()
	t.Cleanup(func() {
		testMembers.Lock()
		delete(testMembers.of, ns)
		testMembers.Unlock()
	})
	n.system.Root.Send(n.gw.pid, membership.NodeJoined{ID: n.id})
	for _, o := range others {
		n.system.Root.Send(n.gw.pid, membership.NodeJoined{ID: o.id})
		o.system.Root.Send(o.gw.pid, membership.NodeJoined{ID: n.id})
	}
	return n
}

// testMembers lists the nodes started on each test NATS server.
var testMembers = struct {
	sync.Mutex
	of map[*natsembed.Server][]*testNode
}{of: map[*natsembed.Server][]*testNode{}}

// forward sends a task to node to, as this node's raylet would.
func (n *testNode) forward(to ids.NodeID, name string) *atollpb.TaskSpec {
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: name, NumReturns: 1}
	n.system.Root.Send(n.gw.pid, &forwardTask{node: to, spec: spec, owner: n.owner, hops: 1})
	return spec
}

func (n *testNode) sizes() *atollpb.NodeStats {
	n.t.Helper()
	st, err := n.gw.Stats(context.Background(), false)
	if err != nil {
		n.t.Fatal(err)
	}
	return st
}

func (n *testNode) counters() leaseCounters {
	n.t.Helper()
	res, err := n.system.Root.RequestFuture(n.gw.pid, &getCounters{}, waitTimeout).Result()
	if err != nil {
		n.t.Fatal(err)
	}
	return res.(leaseCounters)
}

// dropper drops the messages of one kind while on is set.
type dropper struct {
	mu   sync.Mutex
	kind string
	on   bool
	n    int
}

func (d *dropper) drop(kind string, _ proto.Message) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.on && kind == d.kind {
		d.n++
		return true
	}
	return false
}

func (d *dropper) dropped() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// checkLost checks that r fails spec with FORWARD_LOST naming node, and
// that it came within the lease plus one interval (plus slack), not before
// the lease.
func checkLost(t *testing.T, r *atollpb.TaskResult, spec *atollpb.TaskSpec, node ids.NodeID, sent time.Time) {
	t.Helper()
	took := time.Since(sent)
	err := errs.FromProto(r.Error)
	var lost *errs.ForwardLostError
	if string(r.TaskId) != string(spec.TaskId) || !errors.Is(err, errs.ErrForwardLost) || !errors.As(err, &lost) ||
		lost.NodeID != node.String() || lost.TaskName != spec.Name {
		t.Fatalf("result %v (%v), want FORWARD_LOST for %s naming node %s", r, err, spec.Name, node.Short())
	}
	if took < testLease || took > testLease+testInterval+leaseSlack {
		t.Errorf("failed after %v, want within the lease %v plus %v", took, testLease, testInterval+leaseSlack)
	}
	t.Logf("%s failed after %v: %v", spec.Name, took, err)
}

// TestLostResultFailsItsOwner: node B runs a task node A forwarded and
// answers, but the result is lost on the way back: B no longer holds the
// attempt, stops confirming it, and A fails it with FORWARD_LOST within
// the lease.
func TestLostResultFailsItsOwner(t *testing.T) {
	ns := startNATS(t)
	lose := &dropper{kind: "result", on: true}
	a := startNode(t, ns, func(c *Config) { c.drop = lose.drop })
	b := startNode(t, ns, nil)

	sent := time.Now()
	spec := a.forward(b.id, "lost-result")
	s := recv(t, b.submits, "B's raylet got no task")
	b.system.Root.Send(s.reply, &atollpb.TaskResult{TaskId: s.spec.TaskId, Attempt: s.spec.Attempt})
	testutil.Eventually(t, "A to drop the result", func() bool { return lose.dropped() == 1 })
	checkLost(t, recv(t, a.results, "the owner heard nothing of its lost result"), spec, b.id, sent)
	if st := a.sizes(); st.Pending != 0 || st.ForwardsLost != 1 {
		t.Errorf("A after the loss: %d pending, %d lost; want 0 and 1", st.Pending, st.ForwardsLost)
	}
	if st := b.sizes(); st.Inbound != 0 {
		t.Errorf("B holds %d inbound attempts after answering, want 0", st.Inbound)
	}
}

// TestUnreceivedTaskFailsItsOwner: the task itself is lost on its way to
// B: B never confirms it, and A fails it within the lease.
func TestUnreceivedTaskFailsItsOwner(t *testing.T) {
	ns := startNATS(t)
	lose := &dropper{kind: "task", on: true}
	a := startNode(t, ns, nil)
	b := startNode(t, ns, func(c *Config) { c.drop = lose.drop })

	sent := time.Now()
	spec := a.forward(b.id, "never-received")
	checkLost(t, recv(t, a.results, "the owner of a task that never arrived heard nothing"), spec, b.id, sent)
	if lose.dropped() != 1 {
		t.Errorf("B dropped %d tasks, want 1", lose.dropped())
	}
	// Sent to a node that does not exist at all: the same.
	sent = time.Now()
	nobody := ids.NewNodeID()
	spec = a.forward(nobody, "no-such-node")
	checkLost(t, recv(t, a.results, "the owner of a task sent nowhere heard nothing"), spec, nobody, sent)
}

// TestConfirmedLongTaskIsNotExpired: B holds a task for many leases (a
// long task) and keeps confirming it: A does not expire it, and delivers
// its result when it comes.
func TestConfirmedLongTaskIsNotExpired(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	b := startNode(t, ns, nil)

	spec := a.forward(b.id, "long")
	sent := time.Now()
	s := recv(t, b.submits, "B's raylet got no task")
	// Wait, by A's own clock, for 3 leases' worth of sweeps and for B's
	// renewals to have been applied throughout.
	start := a.counters()
	sweeps := uint64(3 * testLease / testInterval)
	testutil.Eventually(t, "A to sweep its pending work for 3 leases", func() bool {
		c := a.counters()
		return c.sweeps-start.sweeps >= sweeps && time.Since(sent) > 3*testLease
	})
	c := a.counters()
	if c.lost != 0 || c.renewals-start.renewals < sweeps/2 {
		t.Fatalf("after %v: %d lost, %d renewals; want none lost and renewals all along", time.Since(sent), c.lost, c.renewals-start.renewals)
	}
	select {
	case r := <-a.results:
		t.Fatalf("the owner got %v while B still ran the task", r)
	default:
	}
	if st := a.sizes(); st.Pending != 1 {
		t.Fatalf("A has %d pending attempts, want 1", st.Pending)
	}
	// The task ends: its result arrives, not an error.
	b.system.Root.Send(s.reply, &atollpb.TaskResult{TaskId: s.spec.TaskId, Attempt: s.spec.Attempt})
	r := recv(t, a.results, "the owner got no result")
	if r.Error != nil || string(r.TaskId) != string(spec.TaskId) {
		t.Fatalf("result %v, want the task's success", r)
	}
	testutil.Eventually(t, "A's pending entry to go", func() bool { return a.sizes().Pending == 0 })
}

// TestLostResultOfARelayedTask: A forwards to B, B spills the task back
// to C, C runs it and its result to B is lost: B fails its pending entry
// with FORWARD_LOST and passes that back to A, whose owner gets it.
func TestLostResultOfARelayedTask(t *testing.T) {
	ns := startNATS(t)
	lose := &dropper{kind: "result", on: true}
	a := startNode(t, ns, nil)
	b := startNode(t, ns, func(c *Config) { c.drop = lose.drop })
	c := startNode(t, ns, nil)

	sent := time.Now()
	spec := a.forward(b.id, "relayed")
	atB := recv(t, b.submits, "B's raylet got no task")
	// B's raylet spills it on to C; the result comes back to B's gateway.
	b.system.Root.Send(b.gw.pid, &forwardTask{node: c.id, spec: atB.spec, owner: b.gw.pid, hops: 2})
	s := recv(t, c.submits, "C's raylet got no task")
	c.system.Root.Send(s.reply, &atollpb.TaskResult{TaskId: s.spec.TaskId, Attempt: s.spec.Attempt})
	// B kept confirming the attempt to A while it waited for C; C's result
	// is lost at B, so B fails the attempt and passes the failure on.
	checkLost(t, recv(t, a.results, "A's owner heard nothing of the relayed task"), spec, c.id, sent)
	if st := b.sizes(); st.Pending != 0 || st.Inbound != 0 || st.ForwardsLost != 1 {
		t.Errorf("B after the loss: %d pending, %d inbound, %d lost; want 0, 0, 1", st.Pending, st.Inbound, st.ForwardsLost)
	}
}

// TestCallToAMissingHostFails: a call forwarded to a host address with no
// actor behind it fails with ActorDiedError instead of waiting forever.
func TestCallToAMissingHostFails(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, func(c *Config) { c.ForwardLease, c.ConfirmInterval = time.Hour, time.Minute })
	b := startNode(t, ns, nil)
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "m", NumReturns: 1}
	a.system.Root.Send(a.gw.pid, &forwardCall{node: b.id, address: "actor$gone", spec: spec, caller: a.owner})
	r := recv(t, a.results, "the caller heard nothing")
	if !errors.Is(errs.FromProto(r.Error), errs.ErrActorDied) {
		t.Fatalf("result %v, want ACTOR_DIED", r.Error)
	}
	testutil.Eventually(t, "B to forget the call", func() bool { return b.sizes().Inbound == 0 })
}

// TestOwnersGoWhenTheirProcessExits: B records the owner of a task A
// forwarded; when that owner's process exits on A, B forgets it and frees
// what it owned on B.
func TestOwnersGoWhenTheirProcessExits(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	b := startNode(t, ns, nil)
	w := ids.NewWorkerID()
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "t", NumReturns: 1, OwnerId: w.Bytes(), OwnerAddress: a.id.String()}
	a.system.Root.Send(a.gw.pid, &forwardTask{node: b.id, spec: spec, owner: a.owner, hops: 1})
	s := recv(t, b.submits, "B's raylet got no task")
	b.system.Root.Send(s.reply, &atollpb.TaskResult{TaskId: s.spec.TaskId})
	recv(t, a.results, "no result")
	if st := b.sizes(); st.Owners != 1 || st.OwnerNodes != 1 {
		t.Fatalf("B records %d owners on %d nodes, want 1 on 1", st.Owners, st.OwnerNodes)
	}
	a.gw.OwnerExited(w)
	if got := recv(t, b.freed, "B's store was not told"); got != w {
		t.Fatalf("B's store freed the objects of %s, want %s", got.Short(), w.Short())
	}
	if st := b.sizes(); st.Owners != 0 || st.OwnerNodes != 0 {
		t.Fatalf("B records %d owners on %d nodes after the exit, want none", st.Owners, st.OwnerNodes)
	}
	// A forgets nothing it did not record, and frees nothing itself (its
	// raylet did).
	select {
	case x := <-a.freed:
		t.Fatalf("A's store was told to free %s", x.Short())
	default:
	}
}

// TestDeadNodesAreCapped: a gateway remembers at most MaxDeadNodes dead
// nodes, the latest ones, and forgets the others from its heard set too.
func TestDeadNodesAreCapped(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, func(c *Config) { c.MaxDeadNodes = 3 })
	var nodes []ids.NodeID
	for range 10 {
		n := ids.NewNodeID()
		nodes = append(nodes, n)
		load := &atollpb.NodeLoad{NodeId: n.Bytes(), Total: map[string]float64{"CPU": 1}}
		a.system.Root.Send(a.gw.pid, load)
		a.system.Root.Send(a.gw.pid, &atollpb.NodeLoad{NodeId: n.Bytes(), Leaving: true})
	}
	st := a.sizes()
	if st.DeadNodes != 3 || st.MaxDeadNodes != 3 || st.HeardNodes != 3 || st.Peers != 0 {
		t.Fatalf("%d dead (cap %d), %d heard, %d peers; want 3, 3, 3, 0", st.DeadNodes, st.MaxDeadNodes, st.HeardNodes, st.Peers)
	}
	for i, n := range nodes {
		if remembered := i >= 7; a.gw.heard.has(n) != remembered {
			t.Errorf("node %d in the heard set: %v, want %v", i, !remembered, remembered)
		}
	}
}

// TestMalformedMessagesAreDropped: messages that do not decode or carry
// malformed ids are logged and dropped; the gateway keeps serving.
func TestMalformedMessagesAreDropped(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	b := startNode(t, ns, nil)
	short := []byte{1, 2, 3}
	bad := []proto.Message{
		&atollpb.ForwardTask{Spec: &atollpb.TaskSpec{TaskId: short}, OriginNode: a.id.Bytes()},
		&atollpb.ForwardTask{OriginNode: a.id.Bytes()},
		&atollpb.ForwardTask{Spec: &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Args: []*atollpb.TaskArg{
			{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: short}}}}}, OriginNode: a.id.Bytes()},
		&atollpb.ForwardActorCall{Spec: &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes()}, OriginNode: short, Address: "x"},
		&atollpb.ForwardedResult{Result: &atollpb.TaskResult{TaskId: short}},
		&atollpb.ForwardedResult{},
		&atollpb.HeldWork{FromNode: short},
		&atollpb.ForwardCancel{TaskId: short},
	}
	subjects := []string{"task", "task", "task", "call", "result", "result", "held", "cancel"}
	for i, m := range bad {
		data, _ := proto.Marshal(m)
		if err := a.nc.Publish(nodeSubject(DefaultPrefix, b.id, subjects[i]), data); err != nil {
			t.Fatal(err)
		}
	}
	for _, subject := range []string{nodeSubject(DefaultPrefix, b.id, "task"), loadSubject(DefaultPrefix, b.id),
		ownersExitedSubject(DefaultPrefix), nodeSubject(DefaultPrefix, b.id, "copy")} {
		if err := a.nc.Publish(subject, []byte("\xff\xff not a protobuf")); err != nil {
			t.Fatal(err)
		}
	}
	// A HeldWork whose attempts are malformed is applied for the rest.
	data, _ := proto.Marshal(&atollpb.HeldWork{FromNode: a.id.Bytes(), Attempts: []*atollpb.AttemptKey{{TaskId: short}}})
	if err := a.nc.Publish(nodeSubject(DefaultPrefix, b.id, "held"), data); err != nil {
		t.Fatal(err)
	}
	// B still works: a task from A runs and answers.
	a.forward(b.id, "after the garbage")
	s := recv(t, b.submits, "B's raylet got no task after the garbage")
	if s.spec.Name != "after the garbage" {
		t.Fatalf("B's raylet got %q: a malformed task went through", s.spec.Name)
	}
	b.system.Root.Send(s.reply, &atollpb.TaskResult{TaskId: s.spec.TaskId})
	if r := recv(t, a.results, "no result"); r.Error != nil {
		t.Fatalf("result %v", r.Error)
	}
	// The HeldWork travels on a subscription of its own: it may be
	// applied after the task's result came back.
	testutil.Eventually(t, "B to apply the valid HeldWork", func() bool { return b.counters().renewals >= 1 })
	if c := b.counters(); c.renewals != 1 || c.restarts != 0 {
		t.Errorf("B applied %d HeldWork messages and restarted %d times; want the 1 valid one and no restart", c.renewals, c.restarts)
	}
}

// TestLimitsFromTheEnvironment: zero Config fields take the environment's
// values, then the defaults; bad values are refused.
func TestLimitsFromTheEnvironment(t *testing.T) {
	// The default lease: twice the failure budget, so a dead node's work
	// fails as NODE_DIED before its lease runs out.
	for budget, want := range map[time.Duration]time.Duration{0: 10 * time.Second, 2 * time.Second: 4 * time.Second} {
		c := Config{FailureBudget: budget}
		if err := c.withLimits(); err != nil || c.ForwardLease != want || c.MaxDeadNodes != DefaultMaxDeadNodes || c.MaxOwners != DefaultMaxOwners {
			t.Errorf("budget %v: lease %v (want %v), caps %d %d, %v", budget, c.ForwardLease, want, c.MaxDeadNodes, c.MaxOwners, err)
		}
	}
	t.Setenv(EnvForwardLease, "7s")
	t.Setenv(EnvMaxOwners, "12")
	c := Config{MaxDeadNodes: 5}
	if err := c.withLimits(); err != nil {
		t.Fatal(err)
	}
	if c.ForwardLease != 7*time.Second || c.MaxOwners != 12 || c.MaxDeadNodes != 5 || c.ConfirmInterval != DefaultConfirmInterval {
		t.Errorf("limits %v %d %d %v", c.ForwardLease, c.MaxOwners, c.MaxDeadNodes, c.ConfirmInterval)
	}
	for _, bad := range []struct{ env, value string }{
		{EnvForwardLease, "soon"}, {EnvForwardLease, "-1s"}, {EnvForwardLease, "1500ms"}, // < 2 × the 1 s interval
		{EnvMaxDeadNodes, "0"}, {EnvConfirmInterval, "x"},
	} {
		t.Run(bad.env+"="+bad.value, func(t *testing.T) {
			t.Setenv(bad.env, bad.value)
			if err := (&Config{}).withLimits(); err == nil {
				t.Errorf("%s=%q accepted", bad.env, bad.value)
			}
		})
	}
}

func TestOwnersAreCapped(t *testing.T) {
	o := newOwners(3, slog.New(slog.DiscardHandler))
	node := ids.NewNodeID()
	var ws []ids.WorkerID
	for range 5 {
		w := ids.NewWorkerID()
		ws = append(ws, w)
		o.record(w.Bytes(), hex.EncodeToString(node.Bytes()))
	}
	o.record(ws[4].Bytes(), node.String()) // again: no new entry
	o.record([]byte{1}, node.String())     // malformed: ignored
	if n, nodes := o.sizes(); n != 3 || nodes != 1 {
		t.Fatalf("%d owners on %d nodes, want 3 on 1", n, nodes)
	}
	if o.exited(node, ws[0]) || !o.exited(node, ws[2]) {
		t.Fatal("the oldest owners should have been evicted, the later kept")
	}
	got := o.forget(node)
	if len(got) != 2 {
		t.Fatalf("forget returned %v, want the 2 left", got)
	}
	if n, nodes := o.sizes(); n != 0 || nodes != 0 {
		t.Fatalf("%d owners on %d nodes after forget, want none", n, nodes)
	}
}

func TestFIFOSet(t *testing.T) {
	s := newFIFOSet[int]()
	for i := range 5 {
		s.add(i)
	}
	if s.add(3) || !s.remove(1) || s.remove(1) || s.len() != 4 {
		t.Fatal("add/remove")
	}
	for _, want := range []int{0, 2, 3, 4} {
		if got, ok := s.popOldest(); !ok || got != want {
			t.Fatalf("popOldest %d %v, want %d", got, ok, want)
		}
	}
	if _, ok := s.popOldest(); ok {
		t.Fatal("popOldest of an empty set")
	}
	// Churn leaves no garbage behind.
	s.add(-1)
	for i := range 10000 {
		s.add(i)
		s.remove(i)
	}
	if s.len() != 1 || len(s.queue) > 2*s.len()+64 {
		t.Fatalf("%d keys, queue of %d", s.len(), len(s.queue))
	}
}
