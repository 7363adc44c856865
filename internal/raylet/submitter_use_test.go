package raylet

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A submitter's results send the raylet nothing until EventBatchSize events
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
	finish(EventBatchSize - 1)
	if delivered != EventBatchSize-1 {
		t.Fatalf("%d results delivered, want %d", delivered, EventBatchSize-1)
	}
	u := s.takeUse()
	if u == nil || len(u.events) != EventBatchSize-1 || len(u.counts) != 1 || u.counts[0].finished != EventBatchSize-1 {
		t.Fatalf("use taken: %+v; want %d events and one lease's count", u, EventBatchSize-1)
	}
	if s.takeUse() != nil {
		t.Fatal("use taken twice")
	}
	// A full batch goes out on its own, once.
	finish(EventBatchSize)
	select {
	case u := <-sent:
		if len(u.events) != EventBatchSize || u.holder != s {
			t.Fatalf("a report of %d events from %p, want %d from %p", len(u.events), u.holder, EventBatchSize, s)
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
	// The raylet gives a report's events back (applyUse): the next full
	// batch is the same array.
	var first []TaskEvent
	finish(EventBatchSize)
	select {
	case u := <-sent:
		first = u.events
		s.recycle(u.events)
	case <-time.After(10 * time.Second):
		t.Fatal("no report after a full batch")
	}
	finish(EventBatchSize)
	select {
	case u := <-sent:
		if &u.events[0] != &first[0] || u.events[0].TaskID.IsZero() {
			t.Fatal("the batch given back was not refilled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no report after a full batch")
	}
}

// A batch of events the raylet has applied and given back is the next
// batch a submitter fills: a task's event costs no slice growing.
func TestEventBatchRecycles(t *testing.T) {
	var b EventBatch
	for i := range EventBatchSize {
		if full := b.Add(TaskEvent{Name: "t"}); full != (i == EventBatchSize-1) {
			t.Fatalf("Add %d reported full=%v", i, full)
		}
	}
	first := b.Take()
	if len(first) != EventBatchSize || b.Len() != 0 || b.Take() != nil {
		t.Fatalf("took %d events, %d left", len(first), b.Len())
	}
	b.Recycle(first)
	b.Add(TaskEvent{Name: "u"})
	next := b.Take()
	if &next[0] != &first[0] {
		t.Fatal("the next batch did not reuse the recycled one")
	}
	if first[1].Name != "" || next[0].Name != "u" {
		t.Fatalf("recycled events not cleared: %q, %q", first[1].Name, next[0].Name)
	}
	// A batch grown past the size, or one given back while another is
	// kept, is let go.
	grown := make([]TaskEvent, 0, 2*EventBatchSize)
	b.Recycle(grown)
	b.Recycle(next)
	b.Recycle(make([]TaskEvent, 0, EventBatchSize))
	b.Add(TaskEvent{})
	if got := b.Take(); &got[0] != &next[0] {
		t.Fatal("the batch kept was not the first given back")
	}
	allocs := testing.AllocsPerRun(10, func() {
		for range EventBatchSize {
			b.Add(TaskEvent{Name: "t"})
		}
		b.Recycle(b.Take())
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per recycled batch, want 0", allocs)
	}
	// The raylet gives a submitter's report back once its timeline has
	// copies of the events.
	s := &Submitter{}
	for range EventBatchSize {
		s.events.Add(TaskEvent{Name: "v"})
	}
	u := &leaseUse{holder: s, events: s.events.Take()}
	r := &raylet{timeline: timeline{cap: 2 * EventBatchSize}}
	r.applyUse(time.Now(), u)
	if len(r.timeline.events) != EventBatchSize || r.timeline.events[0].Name != "v" {
		t.Fatalf("the timeline has %d events, want %d named v", len(r.timeline.events), EventBatchSize)
	}
	if s.events.spare == nil || &s.events.spare[:1][0] != &u.events[0] {
		t.Fatal("the raylet did not give the report's events back")
	}
}
