package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// genItem is item index of a generator attempt, as a worker reports it.
func genItem(spec *atollpb.TaskSpec, index int64, inline []byte) *atollpb.TaskResult {
	id := ids.ReturnObjectID(ids.MustFromBytes(spec.TaskId), int(index)+1)
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, GeneratorItem: &atollpb.GeneratorItem{Index: index},
		Returns: []*atollpb.ReturnObject{{ObjectId: id.Bytes(), Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: inline}}}}}
}

// TestGeneratorLinks: a generator attempt goes A → B → A → B (spilled
// back twice) and runs on B, which holds it twice. Its items reach the
// owner on A in order and before its result, each once, although no
// stack entry is popped on their way; an ack from A's raylet is passed on
// link by link (1, 2, 3) and stops at the last. A gateway following the
// tops of its stacks would send the items between A and B forever.
func TestGeneratorLinks(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	b := startNode(t, ns, nil)
	spec := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: "gen", NumReturns: 1, Generator: true, Attempt: 2}
	a.system.Root.Send(a.gw.pid, &forwardTask{node: b.id, spec: spec, owner: a.owner, hops: 1})
	s1 := recv(t, b.submits, "B to receive the attempt (link 1)")
	b.system.Root.Send(b.gw.pid, &forwardTask{node: a.id, spec: s1.spec, owner: s1.reply, hops: 2})
	s2 := recv(t, a.submits, "A to receive it back (link 2)")
	a.system.Root.Send(a.gw.pid, &forwardTask{node: b.id, spec: s2.spec, owner: s2.reply, hops: 3})
	run := recv(t, b.submits, "B to receive it again (link 3)")

	// B's raylet has the ack for an attempt it does not run on link 1's
	// visit: its gateway passes it on link 2, then A's on link 3.
	ack := &atollpb.GeneratorAck{TaskId: spec.TaskId, Attempt: spec.Attempt, Consumed: 1}
	a.system.Root.Send(a.gw.pid, &ackForwarded{ack: ack, hops: 0})
	for hops, n := range []*testNode{b, a, b} {
		got := recv(t, n.acks, "the ack on its next link")
		if got.Hops != int32(hops+1) || string(got.Ack.TaskId) != string(spec.TaskId) || got.Ack.Attempt != spec.Attempt || got.Ack.Consumed != 1 {
			t.Fatalf("ack %d: %v; want link %d", hops, got, hops+1)
		}
		n.system.Root.Send(n.gw.pid, &ackForwarded{ack: got.Ack, hops: got.Hops})
	}

	// The items come while the attempt runs: no result has popped the
	// stacks yet.
	for i := range int64(3) {
		b.system.Root.Send(run.reply, genItem(run.spec, i, []byte{byte(i)}))
	}
	for i := range int64(3) {
		r := recv(t, a.results, "an item at the owner")
		if r.GeneratorItem.GetIndex() != i || r.GeneratorItem == nil || string(r.Returns[0].Value.GetInline()) != string([]byte{byte(i)}) {
			t.Fatalf("the owner's message %d: %v; want item %d", i, r, i)
		}
	}
	// The last item and the result: the result comes after it.
	b.system.Root.Send(run.reply, genItem(run.spec, 3, []byte{3}))
	b.system.Root.Send(run.reply, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt})
	if r := recv(t, a.results, "the last item at the owner"); r.GeneratorItem.GetIndex() != 3 {
		t.Fatalf("the owner's message 3: %v; want item 3", r)
	}
	if r := recv(t, a.results, "the attempt's result at the owner"); r.GeneratorItem != nil || r.Error != nil {
		t.Fatalf("after the items: %v; want the attempt's result", r)
	}
	// The result popped every entry; nothing is left to relay an item.
	testutil.Eventually(t, "both gateways to forget the attempt", func() bool {
		sa, sb := a.sizes(), b.sizes()
		return sa.Pending == 0 && sa.Inbound == 0 && sb.Pending == 0 && sb.Inbound == 0
	})
	select {
	case n := <-b.acks:
		t.Fatalf("an ack past the last link: %v", n)
	case r := <-a.results:
		t.Fatalf("a message after the result: %v", r)
	default:
	}
}

// TestGeneratorItemTooLarge: an item larger than the NATS server's max
// payload cannot go back: the attempt is cancelled on its node, its later
// items are dropped, and its result, whatever it was, reaches the owner as
// INVALID_ARGUMENT naming the item.
func TestGeneratorItemTooLarge(t *testing.T) {
	ns := startNATS(t)
	a := startNode(t, ns, nil)
	b := startNode(t, ns, nil)
	spec := a.forward(b.id, "gen")
	run := recv(t, b.submits, "B to receive the attempt")
	huge := make([]byte, b.nc.MaxPayload()+1)
	b.system.Root.Send(run.reply, genItem(run.spec, 0, huge))
	if got := recv(t, b.cancels, "the attempt to be cancelled"); got != ids.MustFromBytes(spec.TaskId) {
		t.Fatalf("cancelled %s, want %s", got.Short(), ids.MustFromBytes(spec.TaskId).Short())
	}
	b.system.Root.Send(run.reply, genItem(run.spec, 1, []byte{1}))
	cancelled := errs.ToProto(&errs.CancelledError{TaskName: "gen"})
	b.system.Root.Send(run.reply, &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: cancelled})
	r := recv(t, a.results, "the attempt's result at the owner")
	err := errs.FromProto(r.Error)
	if r.GeneratorItem != nil || !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "item 0 of generator task") {
		t.Fatalf("the owner got %v (%v); want the attempt's result, INVALID_ARGUMENT naming item 0", r, err)
	}
	testutil.Eventually(t, "both gateways to forget the attempt", func() bool {
		sa, sb := a.sizes(), b.sizes()
		return sa.Pending == 0 && sa.Inbound == 0 && sb.Pending == 0 && sb.Inbound == 0
	})
}
