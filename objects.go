package atoll

import (
	"sync"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// objectEntry is the owner's record of one object: its state, its value
// (inline bytes, a location in the store, or an error) and its reference
// count. The count is local handles + uses by submitted tasks + containers
// (objects whose value holds a ref to this one).
type objectEntry struct {
	id       ids.ObjectID
	value    *atollpb.Value // nil while pending
	producer *atollpb.TraceContext
	refs     int
	done     chan struct{} // closed when value is set
	onReady  []func()
	// contained are the refs serialised inside this object's value; they
	// stay referenced until this object is freed.
	contained []ids.ObjectID
	// borrowed: another process owns the object; freeing the entry does
	// not free it in the store.
	borrowed bool
}

func (e *objectEntry) ready() bool { return e.value != nil }

// objectTable is the owner's table of objects. It is shared by user
// goroutines (Put, Get, submit) and the owner actor (task results), so it
// is guarded by a mutex; nothing blocks or does I/O while holding it.
type objectTable struct {
	mu      sync.Mutex
	m       map[ids.ObjectID]*objectEntry
	free    func(stored []ids.ObjectID) // deletes objects from the store
	closed  bool
	created uint64
	freed   uint64
}

func newObjectTable(free func([]ids.ObjectID)) *objectTable {
	return &objectTable{m: map[ids.ObjectID]*objectEntry{}, free: free}
}

// add registers a new object with one reference. value may be nil
// (pending: a task will produce it).
func (t *objectTable) add(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := &objectEntry{id: id, refs: 1, done: make(chan struct{}), producer: producer}
	t.m[id] = e
	t.created++
	if value != nil {
		t.resolveLocked(e, value, producer, contained)
	}
}

// borrow registers, or takes one more reference to, an object owned by
// another process whose value is known.
func (t *objectTable) borrow(id ids.ObjectID, value *atollpb.Value) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		e.refs++
		return
	}
	e := &objectEntry{id: id, refs: 1, done: make(chan struct{}), value: value, borrowed: true}
	close(e.done)
	t.m[id] = e
}

// resolve sets a pending object's value and runs its ready callbacks. A
// second resolve of the same object (a duplicate result) is ignored.
func (t *objectTable) resolve(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) {
	t.mu.Lock()
	e := t.m[id]
	if e == nil {
		t.mu.Unlock()
		// Every reference was dropped before the task finished: free
		// what it stored and what its value referenced.
		if value.GetStored() != nil {
			t.free([]ids.ObjectID{id})
		}
		t.decRef(contained...)
		return
	}
	if e.ready() {
		t.mu.Unlock()
		t.decRef(contained...)
		return
	}
	cbs := t.resolveLocked(e, value, producer, contained)
	t.mu.Unlock()
	for _, cb := range cbs {
		cb()
	}
}

func (t *objectTable) resolveLocked(e *objectEntry, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) []func() {
	e.value = value
	if producer != nil {
		e.producer = producer
	}
	// The encoder of the value already took one reference per contained
	// ref (ObjectRef.GobEncode); this object now holds them.
	e.contained = append(e.contained, contained...)
	close(e.done)
	cbs := e.onReady
	e.onReady = nil
	return cbs
}

// whenReady calls cb once the object has a value (at once if it has one).
// It reports false if the object is unknown.
func (t *objectTable) whenReady(id ids.ObjectID, cb func()) bool {
	t.mu.Lock()
	e := t.m[id]
	if e == nil {
		t.mu.Unlock()
		return false
	}
	if !e.ready() {
		e.onReady = append(e.onReady, cb)
		t.mu.Unlock()
		return true
	}
	t.mu.Unlock()
	cb()
	return true
}

// lookup returns the object's value (nil while pending), producer and done
// channel.
func (t *objectTable) lookup(id ids.ObjectID) (value *atollpb.Value, producer *atollpb.TraceContext, done <-chan struct{}, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	if e == nil {
		return nil, nil, nil, false
	}
	return e.value, e.producer, e.done, true
}

// borrowed reports whether id is owned by another process.
func (t *objectTable) borrowed(id ids.ObjectID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	return e != nil && e.borrowed
}

// incRef adds a reference; it reports false for unknown objects.
func (t *objectTable) incRef(id ids.ObjectID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		e.refs++
		return true
	}
	return false
}

// decRef drops references and frees every object whose count reaches
// zero, recursively through contained refs.
func (t *objectTable) decRef(idl ...ids.ObjectID) {
	var stored []ids.ObjectID
	t.mu.Lock()
	stack := append([]ids.ObjectID(nil), idl...)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := t.m[id]
		if e == nil {
			continue
		}
		e.refs--
		if e.refs > 0 {
			continue
		}
		delete(t.m, id)
		t.freed++
		if e.value.GetStored() != nil && !e.borrowed {
			stored = append(stored, id)
		}
		stack = append(stack, e.contained...)
	}
	closed := t.closed
	t.mu.Unlock()
	if len(stored) > 0 && !closed {
		t.free(stored)
	}
}

// stats reports live objects and lifetime counts.
func (t *objectTable) stats() (live int, created, freed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m), t.created, t.freed
}

// close stops store deletions (the store is going away).
func (t *objectTable) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
}

// storedIDs lists the objects this process owns that live in a store.
func (t *objectTable) storedIDs() []ids.ObjectID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []ids.ObjectID
	for id, e := range t.m {
		if !e.borrowed && e.value.GetStored() != nil {
			out = append(out, id)
		}
	}
	return out
}
