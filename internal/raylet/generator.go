package raylet

import (
	"github.com/atoll-runtime/atoll/atollpb"
)

// A streaming generator task (TaskSpec.generator) reports each item it
// yields while it runs. A worker process sends an item as a task_result
// frame with generator_item set; its connection reader gives it to the
// owner of the attempt in flight (Slot.DeliverItem), on the same path and
// goroutine as the attempt's result, so the owner sees the items in order
// and before the end. The owner answers with GeneratorAck (how many items
// its caller consumed); the raylet passes it to the worker running the
// attempt (generatorAck), whose yields wait for it past the task's
// backpressure limit. An attempt forwarded to another node reports through
// the gateway (its owner there), which passes items back and acks on
// (package cluster, generators.go).

// DeliverItem gives an item reported by the attempt in flight it names to
// that attempt's owner; an item of an attempt the slot does not hold
// (finished, or the worker was cleared) is dropped.
func (s *Slot) DeliverItem(res *atollpb.TaskResult) {
	s.mu.Lock()
	i := s.index(res.GetTaskId(), res.GetAttempt())
	var t *Assignment
	if i >= 0 {
		t = s.inflight[i]
	}
	s.mu.Unlock()
	if t != nil && t.spec.GetGenerator() {
		t.deliver(t.owner, res)
	}
}

// send writes f to the worker process, if one registered.
func (s *Slot) send(f *atollpb.Frame) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Send(f)
		conn.Wake()
	}
}
