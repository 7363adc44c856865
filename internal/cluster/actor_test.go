package cluster

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
)

// harness runs one gateway actor on a real embedded NATS server with a
// probe standing in for its raylet.
type harness struct {
	t      *testing.T
	system *actor.ActorSystem
	nc     *nats.Conn
	gw     *actor.PID
	self   ids.NodeID
	submit chan *atollpb.SubmitTask
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ns, err := natsembed.Start(natsembed.Config{Port: natsembed.NoListener, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h := &harness{t: t, system: actors.NewSystem(nil), nc: nc, self: ids.NewNodeID(), submit: make(chan *atollpb.SubmitTask, 16)}
	t.Cleanup(h.system.Shutdown)
	probe, err := h.system.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*atollpb.SubmitTask); ok {
			h.submit <- m
		}
	}), "raylet")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{NodeID: h.self, Conn: nc, Prefix: DefaultPrefix, System: h.system, Raylet: probe, Logger: slog.Default()}
	if err := cfg.withLimits(); err != nil {
		t.Fatal(err)
	}
	gw := newGatewayActor(cfg, &fetcher{addrs: map[ids.NodeID]string{}}, &peerSet{m: map[ids.NodeID]bool{}}, newOwners(cfg.MaxOwners, cfg.Logger))
	if h.gw, err = h.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return gw }), "gateway"); err != nil {
		t.Fatal(err)
	}
	return h
}

// listen collects what is published on node's subject kind.
func (h *harness) listen(node ids.NodeID, kind string) chan *nats.Msg {
	ch := make(chan *nats.Msg, 16)
	sub, err := h.nc.ChanSubscribe(nodeSubject(DefaultPrefix, node, kind), ch)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := h.nc.Flush(); err != nil {
		h.t.Fatal(err)
	}
	return ch
}

func (h *harness) expect(ch chan *nats.Msg, what string) *nats.Msg {
	h.t.Helper()
	return recv(h.t, ch, "nothing published: "+what)
}

func (h *harness) expectSubmit(what string) {
	h.t.Helper()
	recv(h.t, h.submit, "the raylet got no SubmitTask: "+what)
}

// TestResultRetracesASpillbackChain: a task from node A spills back from
// this node to C, C sends it back here, it runs here; its result must go
// to C, which passes it back here, and then on to A. Each gateway hop
// pops its own entry.
func TestResultRetracesASpillbackChain(t *testing.T) {
	h := newHarness(t)
	a, c := ids.NewNodeID(), ids.NewNodeID()
	toA, toC, taskToC := h.listen(a, "result"), h.listen(c, "result"), h.listen(c, "task")
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "t", NumReturns: 1}
	root := h.system.Root

	root.Send(h.gw, &atollpb.ForwardTask{Spec: spec, OriginNode: a.Bytes(), Hops: 1})
	h.expectSubmit("the task from A")
	// The raylet spills it back to C (results come back to the gateway).
	root.Send(h.gw, &forwardTask{node: c, spec: spec, owner: h.gw, hops: 2})
	h.expect(taskToC, "the spillback to C")
	// C spills it back here.
	root.Send(h.gw, &atollpb.ForwardTask{Spec: spec, OriginNode: c.Bytes(), Hops: 3})
	h.expectSubmit("the task back from C")

	// It runs here: the result goes to C first.
	root.Send(h.gw, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: 0})
	m := h.expect(toC, "the result to C")
	var fr atollpb.ForwardedResult
	if err := proto.Unmarshal(m.Data, &fr); err != nil {
		t.Fatal(err)
	}
	// C passes it back to this node, which answers A.
	root.Send(h.gw, &atollpb.ForwardedResult{Result: fr.Result, FromNode: c.Bytes()})
	h.expect(toA, "the result to A, the task's origin")
	select {
	case <-toC:
		t.Fatal("a second result went to C")
	case <-toA:
		t.Fatal("a second result went to A")
	default:
	}
}

// TestOversizedForwardFailsItsOwner: a task too large for a NATS message
// fails with a typed error instead of vanishing.
func TestOversizedForwardFailsItsOwner(t *testing.T) {
	h := newHarness(t)
	results := make(chan *atollpb.TaskResult, 1)
	owner, err := h.system.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*atollpb.TaskResult); ok {
			results <- r
		}
	}), "owner")
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, h.nc.MaxPayload()+1)
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "big", NumReturns: 1, Args: []*atollpb.TaskArg{
		{Kind: &atollpb.TaskArg_Value{Value: &atollpb.Value{Codec: atollpb.Codec_CODEC_BYTES, Kind: &atollpb.Value_Inline{Inline: big}}}}}}
	h.system.Root.Send(h.gw, &forwardTask{node: ids.NewNodeID(), spec: spec, owner: owner, hops: 1})
	r := recv(t, results, "the owner of an oversized task heard nothing")
	if r.Error.GetCode() != atollpb.ErrorCode_INVALID_ARGUMENT || !strings.Contains(r.Error.GetMessage(), "max payload") {
		t.Fatalf("result %v, want INVALID_ARGUMENT naming the max payload", r.Error)
	}
}

// TestUnsentForwardFailsItsOwner: a forward the shell cannot publish (the
// node's NATS connection is closed) is stepped back into the Forwarder
// (PublishFailed), which fails its owner at once with UNAVAILABLE rather
// than leave it to the lease.
func TestUnsentForwardFailsItsOwner(t *testing.T) {
	h := newHarness(t)
	results := make(chan *atollpb.TaskResult, 1)
	owner, err := h.system.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*atollpb.TaskResult); ok {
			results <- r
		}
	}), "owner")
	if err != nil {
		t.Fatal(err)
	}
	h.nc.Close()
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "unsent", NumReturns: 1}
	h.system.Root.Send(h.gw, &forwardTask{node: ids.NewNodeID(), spec: spec, owner: owner, hops: 1})
	r := recv(t, results, "the owner of an unsent task heard nothing")
	if r.Error.GetCode() != atollpb.ErrorCode_UNAVAILABLE || string(r.TaskId) != string(spec.TaskId) {
		t.Fatalf("result %v, want UNAVAILABLE for the task", r.Error)
	}
}
