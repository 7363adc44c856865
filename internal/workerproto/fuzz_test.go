package workerproto

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// framesOf reads data as a sequence of length-prefixed frames, as far as
// it goes.
func framesOf(data []byte) []*atollpb.Frame {
	var out []*atollpb.Frame
	for len(data) >= 2 {
		n := int(binary.BigEndian.Uint16(data))
		data = data[2:]
		if n > len(data) {
			n = len(data)
		}
		f := &atollpb.Frame{}
		if proto.Unmarshal(data[:n], f) == nil {
			out = append(out, f)
		}
		data = data[n:]
	}
	return out
}

func frameSeed(fs ...*atollpb.Frame) []byte {
	var out []byte
	for _, f := range fs {
		b, _ := proto.Marshal(f)
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		out = append(out, b...)
	}
	return out
}

// FuzzServerFrames sends arbitrary frames from a raylet's end to a
// worker's Server (with the scripted executor), then closes the
// connection. The worker must not panic, and must end: its connection
// closes and Serve returns (the tasks it runs see their contexts
// cancelled).
func FuzzServerFrames(f *testing.F) {
	task := func(fn string) *atollpb.TaskSpec {
		return &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Name: fn, Function: fn, Generator: fn == "block" || fn == "gen"}
	}
	call := &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(), Function: "A.record", Type: atollpb.TaskType_ACTOR_TASK, ConcurrencyGroup: "g"}
	f.Add(frameSeed(
		&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: task("echo")}}},
		&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: task("block")}}},
		&atollpb.Frame{Id: 7, Body: &atollpb.Frame_RecallTask{RecallTask: &atollpb.RecallTask{TaskId: []byte("nope")}}},
		&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: []byte{1, 2}}}},
		&atollpb.Frame{Body: &atollpb.Frame_GeneratorAck{GeneratorAck: &atollpb.GeneratorAck{Consumed: 5}}},
	))
	f.Add(frameSeed(
		&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: call}}},
		&atollpb.Frame{Id: 3, Body: &atollpb.Frame_CreateActor{CreateActor: &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes(),
			ActorCreation: &atollpb.ActorCreationSpec{ActorType: "A", MaxConcurrency: 2}}}},
		&atollpb.Frame{Id: 4, Body: &atollpb.Frame_CreateActor{CreateActor: &atollpb.TaskSpec{TaskId: ids.NewTaskID().Bytes()}}},
		&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: call}}},
		&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{}}},
		&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{}}},
		&atollpb.Frame{Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{}}},
	))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		near, srv, served := servePipe()
		node := workerconn.Open(near, func(*atollpb.Frame) {})
		_ = node.SendAll(framesOf(data)...)
		node.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker did not end after its connection closed")
		}
		<-srv.Conn().Done()
	})
}

// FuzzHostCore steps a HostCore with arbitrary events and checks, after
// each, its invariants (those of the scripts) and what it promises its
// callers: a call is sent at most once per incarnation and never after
// it was answered, failed or dropped; a duplicate is never sent; within
// an incarnation, a caller's numbered calls of one group go out in their
// order.
func FuzzHostCore(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 1, 2, 3, 0, 0})
	f.Add([]byte{2, 2, 2, 1, 3, 0, 3, 1, 4, 4, 5, 1, 2})
	f.Add([]byte{7, 0, 1, 9, 17, 33, 2, 3, 65, 129, 6, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		// The first byte shapes the actor: concurrency, groups, depth.
		shape := data[0]
		spec := &atollpb.ActorCreationSpec{MaxConcurrency: int32(shape % 3)}
		if shape&4 != 0 {
			spec.ConcurrencyGroups = []*atollpb.ConcurrencyGroup{{Name: "g", MaxConcurrency: 1, Methods: []string{"inG"}}}
		}
		e := &hostEnv{}
		e.reset(HostConfig{Actor: spec, PipelineDepth: 1 + int(shape>>3)%3, MaxHeld: 4, GapTimeout: time.Second})
		h := e.core
		type record struct {
			sentIn map[uint64]bool // incarnations it was sent to
			done   bool            // answered, failed or dropped
		}
		calls := map[*Call]*record{}
		nextSeq := map[string]uint64{}
		lastSent := map[string]uint64{} // caller/group/gen -> last seq sent
		apply := func(fx []HostEffect) {
			for _, x := range fx {
				switch x := x.(type) {
				case Send:
					r := calls[x.Call]
					if r.done || r.sentIn[x.Call.gen] {
						t.Fatalf("call %s sent again (done %v)", callName(x.Call), r.done)
					}
					r.sentIn[x.Call.gen] = true
					if seq := x.Call.Spec.SequenceNumber; seq > 0 {
						k := fmt.Sprintf("%s/%s/%d", x.Call.Spec.CallerId, x.Call.group, x.Call.gen)
						if seq <= lastSent[k] {
							t.Fatalf("caller %s: seq %d sent after %d", x.Call.Spec.CallerId, seq, lastSent[k])
						}
						lastSent[k] = seq
					}
				case Reply:
					calls[x.Call].done = true
				case Fail:
					calls[x.Call].done = true
				case Drop:
					calls[x.Call].done = true
				}
			}
		}
		for i, b := range data[1:] {
			switch b % 7 {
			case 0, 1: // a call arrives: a new one, or a duplicate delivery
				caller := fmt.Sprintf("c%d", b>>3%3)
				seq := nextSeq[caller] + 1
				switch b >> 5 {
				case 0: // out of order: one ahead
					seq++
				case 1: // a duplicate of one taken already
					seq = max(1, seq-1)
				default:
					nextSeq[caller] = seq
				}
				method := "m"
				if b&64 != 0 {
					method = "inG"
				}
				c := &Call{Spec: &atollpb.TaskSpec{TaskId: []byte(fmt.Sprintf("t%d", i)), Function: "A." + method, CallerId: []byte(caller), SequenceNumber: seq}}
				calls[c] = &record{sentIn: map[uint64]bool{}}
				apply(h.Arrive(e.now, c))
			case 2:
				e.gen++
				apply(h.Ready(e.now, e.gen))
			case 3, 4: // the oldest or the newest call in flight finishes
				if len(h.inflight) > 0 {
					c := h.inflight[0]
					if b%7 == 4 {
						c = h.inflight[len(h.inflight)-1]
					}
					fx := h.Finish(c.gen, &atollpb.TaskResult{TaskId: c.Spec.TaskId})
					apply(fx)
					due := len(fx) > 0 && fx[len(fx)-1] == HostEffect(PumpDue{})
					if pumped := h.Pump(e.now); len(pumped) > 0 && !due {
						t.Fatalf("Finish did not say PumpDue, and Pump sent %d calls", len(pumped))
					} else {
						apply(pumped)
					}
				}
			case 5:
				apply(h.Crash("fuzz", b&8 != 0))
			case 6:
				e.now = e.now.Add(time.Duration(b) * 10 * time.Millisecond)
				apply(h.Tick(e.now))
			}
			e.check(t)
			for c := range calls {
				if calls[c].done && (slices.Contains(h.inflight, c) || queued(h, c)) {
					t.Fatalf("call %s is done and still held", callName(c))
				}
			}
		}
	})
}

func queued(h *HostCore, c *Call) bool {
	for _, q := range h.queues {
		if slices.Contains(q, c) {
			return true
		}
	}
	return false
}
