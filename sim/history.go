package sim

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/anishathalye/porcupine"
)

// A History records what a workload's clients did, for a checker: each
// operation's input, its output and when it was called and returned, in
// simulated time. Linearizable checks a history against a sequential
// model of the system (with porcupine, github.com/anishathalye/porcupine,
// the checker of Jepsen's style that etcd and others use).
//
// An operation that failed in a way that does not say whether it took
// effect (its reply lost, its actor crashed) is Unknown: it may have
// taken effect at any time after it was called, or never.
type History struct {
	w   *World
	ops []*Op
}

// Op is one operation of a history.
type Op struct {
	h       *History
	client  int
	input   any
	output  any
	call    time.Time
	ret     time.Time
	unknown bool
	done    bool
}

// HistoryOf is the history of the run the calling thread belongs to
// (ctx is the context the simulator gave the workload or a task).
func HistoryOf(ctx context.Context) *History {
	t, _ := ctx.Value(threadKey{}).(*thread)
	if t == nil {
		return nil
	}
	return t.w.history
}

// Call records that client called an operation with input, now.
func (h *History) Call(client int, input any) *Op {
	op := &Op{h: h, client: client, input: input, call: h.w.now}
	h.ops = append(h.ops, op)
	return op
}

// Return records that the operation returned output, now.
func (o *Op) Return(output any) {
	o.output, o.ret, o.done = output, o.h.w.now, true
}

// Unknown records that the operation failed without saying whether it
// took effect.
func (o *Op) Unknown() { o.unknown, o.done = true, true }

// Failed records that the operation did not take effect (a typed error
// that says so: it was never sent, its task never ran): it leaves the
// history.
func (o *Op) Failed() {
	for i, x := range o.h.ops {
		if x == o {
			o.h.ops = append(o.h.ops[:i], o.h.ops[i+1:]...)
			break
		}
	}
}

// Len is the number of operations recorded.
func (h *History) Len() int { return len(h.ops) }

// A Model is a sequential specification: Apply returns the state after
// applying input to state, and the output a correct system returns. It
// must not change state (copy it).
type Model struct {
	Init  func() any
	Apply func(state, input any) (next, output any)
	// Equal compares outputs (default ==).
	Equal func(a, b any) bool
	// Describe renders an operation for a report (optional).
	Describe func(input, output any) string
	// Key, if set, names the part of the state an operation reads or
	// writes (a key of a map): operations of different keys never affect
	// each other, so each key's history is checked on its own. Without
	// it, a few operations of unknown outcome spread over many keys can
	// make the check search for longer than its time limit allows.
	Key func(input any) string
}

// A Checker judges a run from its history once the workload returned.
type Checker struct {
	Name  string
	Check func(h *History) error
}

// Linearizable is a checker that the history is linearizable against m:
// every operation took effect at one instant between its call and its
// return (an unknown one at any instant after its call, or never), in an
// order the model's sequential specification accepts.
func Linearizable(name string, m Model) Checker {
	return Checker{Name: name, Check: func(h *History) error { return h.linearizable(m) }}
}

type unknownOutput struct{}

func (h *History) linearizable(m Model) error {
	eq := m.Equal
	if eq == nil {
		eq = func(a, b any) bool { return a == b }
	}
	ops := make([]porcupine.Operation, 0, len(h.ops))
	for _, o := range h.ops {
		po := porcupine.Operation{ClientId: o.client, Input: o.input, Call: int64(o.call.Sub(Epoch)), Output: o.output,
			Return: int64(o.ret.Sub(Epoch))}
		if o.unknown || !o.done {
			po.Output, po.Return = unknownOutput{}, math.MaxInt64
		}
		ops = append(ops, po)
	}
	pm := porcupine.Model{
		Init:  m.Init,
		Equal: func(a, b any) bool { return reflect.DeepEqual(a, b) },
		Step: func(state, input, output any) (bool, any) {
			next, want := m.Apply(state, input)
			if _, unknown := output.(unknownOutput); unknown {
				return true, next
			}
			return eq(want, output), next
		},
	}
	if m.Describe != nil {
		pm.DescribeOperation = func(input, output any) string { return m.Describe(input, output) }
	}
	if m.Key != nil {
		pm.Partition = func(history []porcupine.Operation) [][]porcupine.Operation {
			var keys []string
			byKey := map[string][]porcupine.Operation{}
			for _, op := range history {
				k := m.Key(op.Input)
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, len(keys))
			for i, k := range keys {
				out[i] = byKey[k]
			}
			return out
		}
	}
	switch porcupine.CheckOperationsTimeout(pm, ops, 30*time.Second) {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return fmt.Errorf("the history of %d operations is not linearizable", len(ops))
	default:
		return fmt.Errorf("the linearizability check of %d operations timed out", len(ops))
	}
}
