package raylet

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A submitter's results send the raylet nothing until maxUseBatch events
// wait: the raylet takes the rest when it tells its state or timeline
// (takeUse), so a synchronous task wakes no actor.
func TestSubmitterUseWaitsForTheRaylet(t *testing.T) {
	system := actors.NewSystem(nil)
	defer system.Shutdown()
	sent := make(chan *leaseUse, 4)
	rl := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if u, ok := c.Message().(*leaseUse); ok {
			sent <- u
		}
	}))
	delivered := 0
	s := NewSubmitter(SubmitterConfig{System: system, Raylet: rl, Deliver: func(*atollpb.TaskResult) { delivered++ }})
	worker := ids.NewWorkerID()
	finish := func(n int) {
		for range n {
			id := ids.NewTaskID()
			spec := &atollpb.TaskSpec{TaskId: id.Bytes(), Name: "t"}
			a := &Assignment{spec: spec, task: id, worker: worker, lease: 7, dtask: &DirectTask{Spec: spec}}
			s.finished(a, &atollpb.TaskResult{TaskId: spec.TaskId})
		}
	}
	finish(maxUseBatch - 1)
	if delivered != maxUseBatch-1 {
		t.Fatalf("%d results delivered, want %d", delivered, maxUseBatch-1)
	}
	u := s.takeUse()
	if u == nil || len(u.events) != maxUseBatch-1 || len(u.counts) != 1 || u.counts[0].finished != maxUseBatch-1 {
		t.Fatalf("use taken: %+v; want %d events and one lease's count", u, maxUseBatch-1)
	}
	if s.takeUse() != nil {
		t.Fatal("use taken twice")
	}
	// A full batch goes out on its own, once.
	finish(maxUseBatch)
	select {
	case u := <-sent:
		if len(u.events) != maxUseBatch || u.holder != s {
			t.Fatalf("a report of %d events from %p, want %d from %p", len(u.events), u.holder, maxUseBatch, s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no report after a full batch")
	}
	// Nothing else was sent: an empty probe sent now (after, from this
	// goroutine) is the next to arrive.
	system.Root.Send(rl, &leaseUse{})
	select {
	case u := <-sent:
		if len(u.events) != 0 {
			t.Fatalf("a second report of %d events, want none but the probe", len(u.events))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not arrive")
	}
}
