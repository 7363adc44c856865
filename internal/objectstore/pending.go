package objectstore

import (
	"container/list"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// pendingQueue is the FIFO of creations waiting for space, indexed by
// object id. Push, Head and Remove are O(1); the sweeps are O(n) and run on
// timer wake-ups and disconnects only.
type pendingQueue struct {
	order *list.List // of queuedCreate
	byID  map[ids.ObjectID]*list.Element
	// bytes is the sum of the queued requests' block sizes: the space
	// they wait for.
	bytes uint64
}

// queuedCreate is a waiting creation and the store's spill epoch when it
// was queued, so that its admission can tell whether spilling made room.
type queuedCreate struct {
	req   CreateRequest
	epoch uint64
}

func newPendingQueue() pendingQueue {
	return pendingQueue{order: list.New(), byID: make(map[ids.ObjectID]*list.Element)}
}

func (q *pendingQueue) Len() int { return q.order.Len() }

func (q *pendingQueue) Has(id ids.ObjectID) bool {
	_, ok := q.byID[id]
	return ok
}

func (q *pendingQueue) Get(id ids.ObjectID) (CreateRequest, bool) {
	e, ok := q.byID[id]
	if !ok {
		return CreateRequest{}, false
	}
	return e.Value.(queuedCreate).req, true
}

func (q *pendingQueue) Push(req CreateRequest, epoch uint64) {
	q.byID[req.ID] = q.order.PushBack(queuedCreate{req, epoch})
	q.bytes += BlockSize(req.Size)
}

func (q *pendingQueue) Head() (CreateRequest, uint64, bool) {
	e := q.order.Front()
	if e == nil {
		return CreateRequest{}, 0, false
	}
	qc := e.Value.(queuedCreate)
	return qc.req, qc.epoch, true
}

func (q *pendingQueue) Remove(id ids.ObjectID) {
	if e, ok := q.byID[id]; ok {
		q.order.Remove(e)
		delete(q.byID, id)
		q.bytes -= BlockSize(e.Value.(queuedCreate).req.Size)
	}
}

// removeIf removes and returns, in queue order, the requests matching f.
func (q *pendingQueue) removeIf(f func(CreateRequest) bool) []CreateRequest {
	var out []CreateRequest
	for e := q.order.Front(); e != nil; {
		next := e.Next()
		if req := e.Value.(queuedCreate).req; f(req) {
			out = append(out, req)
			q.order.Remove(e)
			delete(q.byID, req.ID)
			q.bytes -= BlockSize(req.Size)
		}
		e = next
	}
	return out
}

// RemoveClient removes the requests of one client.
func (q *pendingQueue) RemoveClient(c ids.WorkerID) []CreateRequest {
	return q.removeIf(func(r CreateRequest) bool { return r.Client == c })
}

// RemoveExpired removes the requests whose deadline is not after now.
func (q *pendingQueue) RemoveExpired(now time.Time) []CreateRequest {
	return q.removeIf(func(r CreateRequest) bool { return !r.Deadline.IsZero() && !r.Deadline.After(now) })
}

// NextDeadline returns the earliest deadline of the queued requests.
func (q *pendingQueue) NextDeadline() (time.Time, bool) {
	var earliest time.Time
	for e := q.order.Front(); e != nil; e = e.Next() {
		d := e.Value.(queuedCreate).req.Deadline
		if !d.IsZero() && (earliest.IsZero() || d.Before(earliest)) {
			earliest = d
		}
	}
	return earliest, !earliest.IsZero()
}
