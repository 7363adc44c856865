package owner

import (
	"sort"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// object is the owner's record of one object: its value (inline bytes, a
// location in a store, or an error; nil while a task produces it) and its
// reference count: local handles + uses by submitted tasks + containers
// (objects whose value holds a ref to this one).
type object struct {
	value    *atollpb.Value
	producer *atollpb.TraceContext
	refs     int
	// done is closed when value is set; made on the first Lookup of a
	// pending object (a task's return nobody waits on before it is ready
	// never has one).
	done chan struct{}
	// more holds what few objects need (nil until one does): a task's
	// return that nobody waits on, holds no ref and was not borrowed is
	// 64 bytes, where it was 192 with these inline.
	more *objectMore
	// borrowed: another process owns the object; freeing the entry does
	// not free it in the store (more.ownerNode is where that owner runs).
	borrowed bool
	// strays: copies of the object this record does not know of may be
	// in stores, so freeing it frees it there whatever its value: a value
	// in a store was dropped to rebuild it (a node a reader could not
	// reach still holds the copy), or an attempt of its task ended without
	// its result (lost on the way, or failed after storing some returns).
	strays bool
	// taskReturn: a task's return (else a Put); lineage: its task's
	// kept lineage, which can rebuild it (nil: none kept).
	taskReturn bool
	// noLineage is why it has no lineage, once its task finished
	// without keeping one (in the record's padding: evicting a million
	// lineages allocates nothing).
	noLineage lineageGap
	lineage   *lineageEntry
}

// objectMore is the part of an object's record few objects need.
type objectMore struct {
	watchers []*Waiter
	// waiting are the tasks whose arguments include this object, until it
	// has a value.
	waiting []*task
	// contained are the refs serialised inside this object's value; they
	// stay referenced until this object is freed.
	contained []ids.ObjectID
	// ownerNode is where a borrowed object's owner runs.
	ownerNode ids.NodeID
	// lender is the process that lent a borrowed object to this one (the
	// owner of the task it came with): the one to report holding it to.
	// Zero for objects borrowed otherwise.
	lender ids.WorkerID
	// lineageRefs counts the kept lineage entries that name this object
	// as an argument: with no reference left, it moves to Table.released
	// (its data is freed, its lineage kept) until they go.
	lineageRefs int
}

// noMore is what an object without more reads: never written.
var noMore objectMore

// x returns o's less used fields for reading (all zero when it has none).
func (o *object) x() *objectMore {
	if o.more == nil {
		return &noMore
	}
	return o.more
}

// m returns o's less used fields for writing, made on first use.
func (o *object) m() *objectMore {
	if o.more == nil {
		o.more = &objectMore{}
	}
	return o.more
}

func (o *object) ready() bool { return o.value != nil }

// inStores reports whether copies of o, which this process owns, may be
// in object stores: freeing it must free them.
func (o *object) inStores() bool { return !o.borrowed && (o.value.GetStored() != nil || o.strays) }

// Put registers a new object this process owns, with one reference.
// value may be nil: pending until Resolve (the shell resolves objects it
// writes itself; task returns are resolved by Result).
func (t *Table) Put(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) {
	t.put(id, value, producer, contained)
}

// PutRecord is Put, returning the object's record (for LookupRecord by
// the holder of the reference Put takes).
func (t *Table) PutRecord(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) Record {
	return Record{t.put(id, value, producer, contained)}
}

// put is Put, returning the object's record.
func (t *Table) put(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) *object {
	return t.putRecord(new(object), id, value, producer, contained)
}

// putRecord is put into o, a zero record of the caller's (one made with
// its task's, taskWithReturn).
func (t *Table) putRecord(o *object, id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) *object {
	o.refs, o.producer = 1, producer
	t.objects[id] = o
	t.created++
	if value != nil {
		t.setValue(o, value, producer, contained)
	}
	return o
}

// AddRef takes one more reference; it reports false for unknown (freed)
// objects.
func (t *Table) AddRef(id ids.ObjectID) bool {
	o := t.objects[id]
	if o == nil {
		return false
	}
	o.refs++
	return true
}

// DropRef drops references and frees every object whose count reaches
// zero, recursively through contained refs. Objects this process owns
// that live in a store leave in one Free effect.
func (t *Table) DropRef(idl ...ids.ObjectID) {
	var stored, stack []ids.ObjectID
	if len(idl) == 1 {
		// The common case: one reference, looked up once.
		o := t.objects[idl[0]]
		switch {
		case o == nil:
			return
		case o.refs > 1:
			o.refs-- // one of several references
			return
		}
		stored, stack = t.unref(idl[0], o, stored, stack)
	} else {
		stack = append(stack, idl...)
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if o := t.objects[id]; o != nil {
			stored, stack = t.unref(id, o, stored, stack)
		}
	}
	t.free(stored)
}

// unref drops one reference of o (id's record) and frees it if that was
// the last: it appends to stored the id if it lives in a store, and to
// stack the refs its value held, for DropRef to drop in turn.
func (t *Table) unref(id ids.ObjectID, o *object, stored, stack []ids.ObjectID) ([]ids.ObjectID, []ids.ObjectID) {
	o.refs--
	if o.refs > 0 {
		return stored, stack
	}
	delete(t.objects, id)
	if lender := o.x().lender; !lender.IsZero() {
		t.lentFreed(lender)
	}
	t.setLender(o, ids.WorkerID{})
	t.freed++
	if o.inStores() {
		stored = append(stored, id)
	}
	stack = append(stack, o.x().contained...)
	if o.x().lineageRefs > 0 && !o.borrowed {
		// A kept lineage may need it rebuilt: its data goes, its
		// record stays.
		o.value = nil
		o.more.waiting, o.more.watchers, o.more.contained = nil, nil, nil
		t.released[id] = o
	} else if o.lineage != nil {
		t.objectFreed(o)
	}
	return stored, stack
}

func (t *Table) free(stored []ids.ObjectID) {
	if len(stored) > 0 && !t.closed {
		t.emit(Free{Objects: stored})
	}
}

// Resolve sets a pending object's value: its waiters wake and tasks
// waiting for it as an argument may dispatch. A second resolve of the
// same object (a duplicate result) is ignored, as is a resolve of an
// object whose references are all gone (what it stored is freed).
func (t *Table) Resolve(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) {
	t.resolve(id, value, producer, contained)
}

// resolve is Resolve, returning id's record (nil: freed).
func (t *Table) resolve(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) *object {
	o := t.objects[id]
	switch {
	case o == nil:
		// Every reference was dropped before the task finished: free what
		// it stored and what its value referenced.
		if value.GetStored() != nil {
			t.free([]ids.ObjectID{id})
		}
		t.DropRef(contained...)
	case o.ready():
		t.DropRef(contained...)
	default:
		t.setValue(o, value, producer, contained)
	}
	return o
}

func (t *Table) setValue(o *object, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) {
	o.value = value
	if producer != nil {
		o.producer = producer
	}
	// The encoder of the value took one reference per contained ref; this
	// object holds them now.
	if len(contained) > 0 {
		om := o.m()
		om.contained = append(om.contained, contained...)
	}
	if o.done != nil {
		close(o.done)
		o.done = nil
	}
	for _, w := range o.x().watchers {
		if !w.done {
			t.emit(Notify{C: w.C})
		}
	}
	waiting := o.x().waiting
	if o.more != nil {
		o.more.watchers, o.more.waiting = nil, nil
	}
	for _, tk := range waiting {
		t.depReady(tk)
	}
}

// Lookup returns an object's value (nil while pending), its producer's
// trace context and a channel closed once it has a value.
func (t *Table) Lookup(id ids.ObjectID) (value *atollpb.Value, producer *atollpb.TraceContext, done <-chan struct{}, ok bool) {
	return t.LookupRecord(id, Record{})
}

// Record is the record of an object its holder references: a ref made
// for a task's return keeps its record (SubmitRecords), so that reading
// the object needs no lookup by id. The zero Record is none.
type Record struct{ o *object }

// LookupRecord is Lookup of an object whose record r was handed out
// with the reference the caller holds. A record without references is
// no longer the object's (it was freed, or kept only for lineage): the
// object is then looked up by id, as it is for the zero Record.
func (t *Table) LookupRecord(id ids.ObjectID, r Record) (value *atollpb.Value, producer *atollpb.TraceContext, done <-chan struct{}, ok bool) {
	o := t.recordOf(id, r)
	if o == nil {
		return nil, nil, nil, false
	}
	if o.ready() {
		return o.value, o.producer, closedChan, true
	}
	if o.done == nil {
		o.done = make(chan struct{})
	}
	return o.value, o.producer, o.done, true
}

// ValueOf is LookupRecord's value alone, nil while the object has none:
// a look that makes no done channel, for a caller that reads the
// object's result itself and needs a channel only if it must then wait.
func (t *Table) ValueOf(id ids.ObjectID, r Record) (value *atollpb.Value, ok bool) {
	o := t.recordOf(id, r)
	if o == nil {
		return nil, false
	}
	return o.value, true
}

// recordOf is the record of id: r's if it is still the object's, else
// the one under id (nil: none).
func (t *Table) recordOf(id ids.ObjectID, r Record) *object {
	if o := r.o; o != nil && o.refs > 0 {
		return o
	}
	return t.objects[id]
}

// closedChan is the done channel of every object that has its value.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Waiter is a goroutine waiting for some of many objects (Wait): every
// object it watches that gets a value sends a Notify on C, until Unwatch.
type Waiter struct {
	C    chan<- struct{}
	done bool
}

// Watch arranges a Notify on w.C once id has a value. It reports whether
// id is known and still pending (false: nothing will be sent).
func (t *Table) Watch(id ids.ObjectID, w *Waiter) bool {
	o := t.objects[id]
	if o == nil || o.ready() {
		return false
	}
	// Waiters that gave up leave here, so an object waited on by many
	// Waits in turn keeps one entry per live waiter.
	m := o.m()
	live := m.watchers[:0]
	for _, x := range m.watchers {
		if !x.done {
			live = append(live, x)
		}
	}
	clear(m.watchers[len(live):])
	m.watchers = append(live, w)
	return true
}

// Unwatch ends w: no more Notify for it.
func (t *Table) Unwatch(w *Waiter) { w.done = true }

// Borrowed reports whether id is owned by another process.
func (t *Table) Borrowed(id ids.ObjectID) bool {
	o := t.objects[id]
	return o != nil && o.borrowed
}

// OwnerNode is the node of id's owner as far as this process knows: its
// own for the objects it owns, zero if unknown.
func (t *Table) OwnerNode(id ids.ObjectID) ids.NodeID {
	o := t.objects[id]
	switch {
	case o == nil:
		return ids.NodeID{}
	case o.borrowed:
		return o.x().ownerNode
	}
	return t.cfg.Node
}

// StoredIDs lists the objects this process owns that live in a store, or
// may have copies in one its record does not know of (object.strays), in
// id order.
func (t *Table) StoredIDs() []ids.ObjectID {
	var out []ids.ObjectID
	for id, o := range t.objects {
		if o.inStores() {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}

// NodeDied records that node died: objects borrowed from owners on it
// fail with OwnerDiedError for later readers (their owner can no longer
// vouch for them, and its node's objects are being freed).
func (t *Table) NodeDied(node ids.NodeID) {
	for id, o := range t.objects {
		if o.borrowed && o.x().ownerNode == node && o.value.GetError() == nil {
			o.value = &atollpb.Value{Codec: atollpb.Codec_CODEC_ERROR, Kind: &atollpb.Value_Error{Error: errs.ToProto(
				&errs.OwnerDiedError{ObjectID: id.String(), Message: "the owner's node " + node.Short() + " died"})}}
		}
	}
}
