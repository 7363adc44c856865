package raylet

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// slotPipe returns the raylet's end of a connection and the frames its
// far end (the worker) receives.
func slotPipe(t *testing.T) (*workerconn.Conn, <-chan *atollpb.Frame) {
	t.Helper()
	a, b := net.Pipe()
	got := make(chan *atollpb.Frame, 16)
	near := workerconn.New(a, func(*atollpb.Frame) {})
	far := workerconn.New(b, func(f *atollpb.Frame) { got <- f })
	t.Cleanup(func() { near.Close(); far.Close() })
	return near, got
}

func nextFrame(t *testing.T, got <-chan *atollpb.Frame) *atollpb.Frame {
	t.Helper()
	select {
	case f := <-got:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame reached the worker")
		return nil
	}
}

func assignment(ctx context.Context, attempt int32) *Assignment {
	id := ids.NewTaskID()
	return &Assignment{ctx: ctx, spec: &atollpb.TaskSpec{TaskId: id.Bytes(), Attempt: attempt}, task: id}
}

func resultFor(a *Assignment, attempt int32) *atollpb.TaskResult {
	return &atollpb.TaskResult{TaskId: a.spec.TaskId, Attempt: attempt}
}

// TestSlotHandsOverOnce: a task assigned before the worker registered is
// pushed when it does; its result is taken once, and only for its own
// attempt; a cleared slot gives nothing to a late result; a cancelled
// task's cancel frame follows its push.
func TestSlotHandsOverOnce(t *testing.T) {
	conn, got := slotPipe(t)
	var s Slot
	t1 := assignment(context.Background(), 0)
	s.assign(t1)
	s.Registered(conn, nil)
	if f := nextFrame(t, got); string(f.GetPushTask().GetSpec().GetTaskId()) != string(t1.spec.TaskId) {
		t.Fatalf("worker got %v, want the push of the assigned task", f)
	}
	if s.Finish(resultFor(t1, 1)) != nil {
		t.Fatal("a result for another attempt took the assignment")
	}
	if s.Finish(resultFor(t1, 0)) != t1 {
		t.Fatal("the task's result did not take its assignment")
	}
	if s.Finish(resultFor(t1, 0)) != nil {
		t.Fatal("a duplicated result was taken twice")
	}

	t2 := assignment(context.Background(), 0)
	s.assign(t2)
	nextFrame(t, got)
	s.clear() // the worker was killed: the raylet reports the attempt
	if s.Finish(resultFor(t2, 0)) != nil {
		t.Fatal("a result arriving after clear was taken")
	}

	ctx, cancel := context.WithCancel(context.Background())
	t3 := assignment(ctx, 0)
	s.assign(t3)
	if f := nextFrame(t, got); f.GetPushTask() == nil {
		t.Fatalf("want the push first, got %v", f)
	}
	cancel()
	if f := nextFrame(t, got); string(f.GetCancelTask().GetTaskId()) != string(t3.spec.TaskId) {
		t.Fatalf("want the cancel of the running task, got %v", f)
	}
	if s.Finish(resultFor(t3, 0)) != t3 {
		t.Fatal("the cancelled task's result did not take its assignment")
	}
}

// A cancel queued for a task pushed before its worker registered is sent
// after the task's push once the worker does, not dropped: the worker
// answers it (it ran as if never cancelled before).
func TestSlotKeepsEarlyCancels(t *testing.T) {
	conn, got := slotPipe(t)
	var s Slot
	t1 := assignment(context.Background(), 0)
	s.assign(t1)
	s.queue(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: t1.spec.TaskId}}})
	s.Registered(conn, nil)
	if f := nextFrame(t, got); string(f.GetPushTask().GetSpec().GetTaskId()) != string(t1.spec.TaskId) {
		t.Fatalf("worker got %v, want the push of the assigned task first", f)
	}
	if f := nextFrame(t, got); string(f.GetCancelTask().GetTaskId()) != string(t1.spec.TaskId) {
		t.Fatalf("worker got %v, want the cancel queued before it registered", f)
	}
}
