package outbox

import (
	"slices"
	"sync"
	"testing"
)

// An effect applied while draining steps again: its effects are queued
// and applied after the ones before them by the same drainer, never
// recursively, and the mutex is free while an effect runs.
func TestDrainAppliesInOrderOneDrainerAtATime(t *testing.T) {
	var mu sync.Mutex
	var o Outbox[int]
	var applied []int
	depth := 0
	var apply func(int)
	step := func(effects ...int) {
		mu.Lock()
		o.Add(effects...)
		o.Drain(&mu, apply)
	}
	apply = func(e int) {
		if !mu.TryLock() {
			t.Fatalf("effect %d applied with the mutex held", e)
		}
		mu.Unlock()
		depth++
		defer func() { depth-- }()
		if depth > 1 {
			t.Fatalf("effect %d applied inside another effect", e)
		}
		applied = append(applied, e)
		if e == 1 {
			step(10, 11) // a step made while draining
		}
	}
	step(1, 2)
	step(3)
	if want := []int{1, 2, 10, 11, 3}; !slices.Equal(applied, want) {
		t.Fatalf("applied %v, want %v", applied, want)
	}
}

// In steady state the queue and the batch being applied take turns with
// two arrays: a step allocates nothing.
func TestDrainReusesArrays(t *testing.T) {
	var mu sync.Mutex
	var o Outbox[int]
	sum := 0
	apply := func(e int) { sum += e }
	step := func() {
		mu.Lock()
		o.AddFrom(func(q []int) []int { return append(q, 1, 2, 3) })
		o.Drain(&mu, apply)
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("%v allocations a step, want 0", n)
	}
	if sum != 6*101+6 {
		t.Fatalf("applied a sum of %d, want %d", sum, 6*101+6)
	}
}

// Move hands a machine's effects over in order and keeps its array for
// the next step, but not a flood's.
func TestMoveKeepsTheMachinesArray(t *testing.T) {
	effects := []int{1, 2, 3}
	q := Move([]int{0}, &effects)
	if !slices.Equal(q, []int{0, 1, 2, 3}) || len(effects) != 0 || cap(effects) != 3 {
		t.Fatalf("moved %v, left %v (cap %d)", q, effects, cap(effects))
	}
	flood := make([]int, maxSpare+1)
	Move(nil, &flood)
	if flood != nil {
		t.Fatalf("a flood's array of %d kept", cap(flood))
	}
}
