package util

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Queue is a FIFO queue of T values that lives in an actor (Ray's
// ray.util.queue.Queue): drivers, tasks and actors anywhere in the
// cluster put and get through it. Put waits while the queue is full, Get
// while it is empty, each until its context ends; TryPut and TryGet do
// not wait. An operation that returns an error did not happen: a Get
// that fails took no item, a Put that fails added none.
//
// A *Queue passes to tasks and actors as an argument, inside values too:
// it travels as the queue actor's name and is looked up (GetActor) where
// it is first used. The queue's items live in the actor's memory: they
// are lost if the actor dies, and the actor dies with the process that
// created the queue unless it was created with atoll.Detached().
//
// Waiting does not hold the actor: it runs puts and gets in two
// concurrency groups of QueueWaiters calls each (in either worker mode),
// so a blocked Get never keeps a Put out, and a waiting call gives its
// place back at least every MaxQueueWait (the caller then asks again).
type Queue[T any] struct {
	name string

	mu sync.Mutex
	// actor, once known (hasActor), and its description, once asked
	// (hasInfo).
	actor    atoll.ActorHandle[*queueActor]
	info     *atollpb.QueueInfo
	hasActor bool
	hasInfo  bool
}

// QueueWaiters is how many Puts and how many Gets may wait in a queue's
// actor at once; past it, calls wait for a place in the actor's host.
const QueueWaiters = 128

// MaxQueueWait bounds how long one call waits in the queue's actor: a
// caller whose context allows longer calls again, so that a caller gone
// away holds a place no longer than this.
const MaxQueueWait = time.Second

// answerGrace bounds the wait for the queue actor's answer past the time
// the call may wait in it (the answer says whether the item was taken:
// it is waited for even when the caller's context has ended).
const answerGrace = 30 * time.Second

// The queue's actor takes and answers protobuf messages (atollpb.Queue*):
// its constructor argument and the reply of its method info are a
// QueueInfo, put and get take a QueueRequest, put, get and size answer a
// QueueReply. An item is encoded as any value passed to atoll is.

// queueActor is the queue's state, in its actor.
type queueActor struct {
	info *atollpb.QueueInfo

	mu    sync.Mutex
	items []*atollpb.QueueItem
	// changed is closed (and replaced) whenever items change: waiters
	// look again.
	changed chan struct{}
}

var (
	queueType = atoll.NewActorType1("atoll/util.Queue", func(_ context.Context, info *atollpb.QueueInfo) (*queueActor, error) {
		if info == nil {
			info = &atollpb.QueueInfo{}
		}
		if info.MaxSize < 0 {
			return nil, fmt.Errorf("%w: queue maxSize %d: want 0 (no bound) or more", atoll.ErrInvalidArgument, info.MaxSize)
		}
		return &queueActor{info: info, changed: make(chan struct{})}, nil
	})
	queuePut  = atoll.NewMethod1(queueType, "put", (*queueActor).put)
	queueGet  = atoll.NewMethod1(queueType, "get", (*queueActor).get)
	queueSize = atoll.NewMethod0(queueType, "size", func(a *queueActor, _ context.Context) (*atollpb.QueueReply, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return &atollpb.QueueReply{Size: int64(len(a.items))}, nil
	})
	queueDescribe = atoll.NewMethod0(queueType, "info", func(a *queueActor, _ context.Context) (*atollpb.QueueInfo, error) { return a.info, nil })
)

// signal wakes every waiter; a.mu is held.
func (a *queueActor) signal() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// put adds the request's item, waiting up to the request's time for
// room; it says whether it did.
func (a *queueActor) put(ctx context.Context, req *atollpb.QueueRequest) (*atollpb.QueueReply, error) {
	if req.GetItem() == nil {
		return nil, errs.Malformedf("queue request", "a put without an item")
	}
	ok, err := wait(ctx, a, req.WaitMs, func() bool {
		if a.info.MaxSize > 0 && int64(len(a.items)) >= a.info.MaxSize {
			return false
		}
		a.items = append(a.items, req.Item)
		return true
	})
	return &atollpb.QueueReply{Ok: ok}, err
}

// get takes the oldest item, waiting up to the request's time for one.
func (a *queueActor) get(ctx context.Context, req *atollpb.QueueRequest) (*atollpb.QueueReply, error) {
	r := &atollpb.QueueReply{}
	_, err := wait(ctx, a, req.GetWaitMs(), func() bool {
		if len(a.items) == 0 {
			return false
		}
		r.Ok, r.Item = true, a.items[0]
		a.items[0] = nil
		a.items = a.items[1:]
		return true
	})
	return r, err
}

// wait runs try under the actor's lock until it succeeds (and wakes the
// other waiters), waitMs passes or ctx ends.
func wait(ctx context.Context, a *queueActor, waitMs int64, try func() bool) (bool, error) {
	d := min(time.Duration(max(waitMs, 0))*time.Millisecond, MaxQueueWait)
	var expired <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	for {
		a.mu.Lock()
		if try() {
			a.signal()
			a.mu.Unlock()
			return true, nil
		}
		changed := a.changed
		a.mu.Unlock()
		if expired == nil {
			return false, nil
		}
		select {
		case <-changed:
		case <-expired:
			return false, nil
		case <-ctx.Done():
			return false, nil
		}
	}
}

// NewQueue creates a queue of at most maxSize items (0: no bound) in a
// new actor. opts are the actor's options: placement, resources,
// atoll.ActorName to name the queue (a fresh name otherwise) and
// atoll.Detached() (with a name) to keep it past this process, for
// GetQueue to find.
func NewQueue[T any](ctx context.Context, maxSize int, opts ...atoll.ActorOption) (*Queue[T], error) {
	if maxSize < 0 {
		return nil, fmt.Errorf("%w: NewQueue: maxSize %d: want 0 (no bound) or more", atoll.ErrInvalidArgument, maxSize)
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	// A name comes first, so that the caller's ActorName wins.
	opts = append([]atoll.ActorOption{atoll.ActorName("atoll/util.queue-" + hex.EncodeToString(id[:]))}, opts...)
	info := &atollpb.QueueInfo{MaxSize: int64(maxSize), Elem: elemType[T](), Concurrent: true}
	concurrent := append(opts[:len(opts):len(opts)],
		atoll.ConcurrencyGroup("put", QueueWaiters, "put"), atoll.ConcurrencyGroup("get", QueueWaiters, "get"))
	h, err := queueType.New(ctx, atoll.Value(info), concurrent...)
	if err != nil {
		return nil, fmt.Errorf("NewQueue: %w", err)
	}
	// The actor may be an existing one (atoll.GetIfExists): its own
	// description is asked on first use.
	return &Queue[T]{name: h.Name(), actor: h, hasActor: true}, nil
}

// GetQueue returns the queue named name (made by NewQueue with
// atoll.ActorName). It fails with atoll.ErrNotFound if no live queue has
// that name, and with atoll.ErrInvalidArgument if it holds another type
// than T.
func GetQueue[T any](ctx context.Context, name string) (*Queue[T], error) {
	q := &Queue[T]{name: name}
	if _, _, err := q.resolve(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

func elemType[T any]() string { return reflect.TypeFor[T]().String() }

// Name is the name of the queue's actor.
func (q *Queue[T]) Name() string { return q.name }

// resolve returns the queue's actor and description, looking them up the
// first time (a Queue that arrived as an argument has only its name).
func (q *Queue[T]) resolve(ctx context.Context) (atoll.ActorHandle[*queueActor], *atollpb.QueueInfo, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.hasInfo {
		return q.actor, q.info, nil
	}
	if q.name == "" {
		return q.actor, q.info, fmt.Errorf("%w: zero Queue: make one with NewQueue or GetQueue", atoll.ErrInvalidArgument)
	}
	if !q.hasActor {
		h, err := atoll.GetActor[*queueActor](ctx, q.name)
		if err != nil {
			return h, q.info, fmt.Errorf("queue %s: %w", q.name, err)
		}
		q.actor, q.hasActor = h, true
	}
	h := q.actor
	info, err := atoll.Get(ctx, queueDescribe.Remote(ctx, h))
	if err != nil {
		return h, info, fmt.Errorf("queue %s: %w", q.name, err)
	}
	if want := elemType[T](); info.GetElem() != want {
		return h, info, fmt.Errorf("%w: queue %s holds %s items, not %s", atoll.ErrInvalidArgument, q.name, info.GetElem(), want)
	}
	q.info, q.hasInfo = info, true
	return h, info, nil
}

// Put adds v at the end of the queue, waiting while it is full until ctx
// ends (then the error matches ErrQueueFull and ctx's error).
func (q *Queue[T]) Put(ctx context.Context, v T) error { return q.put(ctx, v, true) }

// TryPut adds v if the queue has room, else fails with ErrQueueFull.
func (q *Queue[T]) TryPut(ctx context.Context, v T) error { return q.put(ctx, v, false) }

// Get takes the item at the front of the queue, waiting while it is empty
// until ctx ends (then the error matches ErrQueueEmpty and ctx's error).
func (q *Queue[T]) Get(ctx context.Context) (T, error) { return q.get(ctx, true) }

// TryGet takes the item at the front of the queue if there is one, else
// fails with ErrQueueEmpty.
func (q *Queue[T]) TryGet(ctx context.Context) (T, error) { return q.get(ctx, false) }

// Size is the number of items in the queue.
func (q *Queue[T]) Size(ctx context.Context) (int, error) {
	h, _, err := q.resolve(ctx)
	if err != nil {
		return 0, err
	}
	r, err := atoll.Get(ctx, queueSize.Remote(ctx, h))
	if err != nil {
		return 0, fmt.Errorf("queue %s: Size: %w", q.name, err)
	}
	return int(r.GetSize()), nil
}

// Shutdown kills the queue's actor; its items are dropped and every
// handle to the queue fails from then on.
func (q *Queue[T]) Shutdown(ctx context.Context) error {
	h, _, err := q.resolve(ctx)
	if err != nil {
		return err
	}
	return atoll.Kill(ctx, h)
}

func (q *Queue[T]) put(ctx context.Context, v T, block bool) error {
	enc, err := codec.Encode(v)
	if err != nil {
		return fmt.Errorf("queue %s: Put: %w", q.name, err)
	}
	// The encoding may alias v's memory; the request is encoded (a copy)
	// when the call is made.
	item := &atollpb.QueueItem{Codec: enc.Codec, Data: enc.Data}
	err = q.retry(ctx, block, func(ctx context.Context, h atoll.ActorHandle[*queueActor], waitMs int64) (bool, error) {
		r, err := answer(ctx, waitMs, func(ctx context.Context) atoll.ObjectRef[*atollpb.QueueReply] {
			return queuePut.Remote(ctx, h, atoll.Value(&atollpb.QueueRequest{Item: item, WaitMs: waitMs}))
		})
		return r.GetOk(), err
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotYet):
		return fmt.Errorf("queue %s: Put: %w", q.name, joinCtx(ErrQueueFull, ctx))
	}
	return fmt.Errorf("queue %s: Put: %w", q.name, err)
}

func (q *Queue[T]) get(ctx context.Context, block bool) (T, error) {
	var zero T
	var reply *atollpb.QueueReply
	err := q.retry(ctx, block, func(ctx context.Context, h atoll.ActorHandle[*queueActor], waitMs int64) (bool, error) {
		r, err := answer(ctx, waitMs, func(ctx context.Context) atoll.ObjectRef[*atollpb.QueueReply] {
			return queueGet.Remote(ctx, h, atoll.Value(&atollpb.QueueRequest{WaitMs: waitMs}))
		})
		reply = r
		return r.GetOk(), err
	})
	switch {
	case errors.Is(err, errNotYet):
		return zero, fmt.Errorf("queue %s: Get: %w", q.name, joinCtx(ErrQueueEmpty, ctx))
	case err != nil:
		return zero, fmt.Errorf("queue %s: Get: %w", q.name, err)
	}
	if reply.GetItem() == nil {
		return zero, fmt.Errorf("queue %s: Get: %w", q.name, errs.Malformedf("queue reply", "an item taken and not sent"))
	}
	v, err := codec.Decode[T](reply.Item.Codec, reply.Item.Data)
	if err != nil {
		return zero, fmt.Errorf("queue %s: Get: the item does not decode as a %s: %w", q.name, elemType[T](), err)
	}
	return v, nil
}

// errNotYet: the queue was full (or empty) until the caller stopped
// waiting.
var errNotYet = errors.New("not yet")

// retry calls try until it succeeds: once without waiting unless block,
// else until ctx ends; try waits up to waitMs in the actor (0 when the
// actor cannot wait, and then retry backs off between calls).
func (q *Queue[T]) retry(ctx context.Context, block bool, try func(context.Context, atoll.ActorHandle[*queueActor], int64) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h, info, err := q.resolve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// The actor was not reached in time (still starting, say):
			// nothing was put or taken.
			return errNotYet
		}
		return err
	}
	backoff := time.Millisecond
	for {
		var waitMs int64
		if block && info.GetConcurrent() {
			waitMs = MaxQueueWait.Milliseconds()
			if deadline, ok := ctx.Deadline(); ok {
				// Rounded up: the actor answers once the deadline has
				// passed, not a moment before it (which would make the
				// next round a call that cannot wait).
				left := time.Until(deadline)
				waitMs = min(waitMs, int64((left+time.Millisecond-1)/time.Millisecond))
			}
		}
		done, err := try(ctx, h, max(waitMs, 0))
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case !block || ctx.Err() != nil:
			return errNotYet
		case !info.GetConcurrent(): // a queue made by an atoll before in-process workers ran concurrency groups
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return errNotYet
			}
			backoff = min(2*backoff, 50*time.Millisecond)
		}
	}
}

// answer makes a call that may wait waitMs in the actor and waits for its
// answer even past ctx's end (bounded by answerGrace): the answer says
// whether the actor took or gave an item, which must not be lost.
func answer[R any](ctx context.Context, waitMs int64, call func(context.Context) atoll.ObjectRef[R]) (R, error) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(waitMs)*time.Millisecond+answerGrace)
	defer cancel()
	return atoll.Get(actx, call(actx))
}

// joinCtx is sentinel joined with ctx's error, if it has one.
func joinCtx(sentinel error, ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return errors.Join(sentinel, err)
	}
	return sentinel
}

// GobEncode writes the queue as its actor's name: a *Queue passed to a
// task or an actor finds its actor again there.
func (q *Queue[T]) GobEncode() ([]byte, error) {
	if q.name == "" {
		return nil, fmt.Errorf("%w: a zero Queue cannot be passed: make one with NewQueue", atoll.ErrInvalidArgument)
	}
	return []byte(q.name), nil
}

// GobDecode reads a queue GobEncode wrote; its actor is looked up on first
// use.
func (q *Queue[T]) GobDecode(b []byte) error {
	if len(b) == 0 || len(b) > maxQueueName {
		return fmt.Errorf("%w: a Queue's encoding is its name, 1 to %d bytes; got %d", atoll.ErrInvalidArgument, maxQueueName, len(b))
	}
	q.name = string(b)
	return nil
}

// maxQueueName bounds a decoded queue name (the GCS bounds entries too).
const maxQueueName = 1024
