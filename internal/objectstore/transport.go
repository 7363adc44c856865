package objectstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Transport carries the object-store protocol (the store.proto messages)
// between a Client and the store actor. Mailbox reaches the actor in the
// same process; FrameTransport reaches it from a worker process through
// its raylet (FrameServer).
//
// Ordering: messages sent through one Transport, by Request and Send
// alike, reach the store in the order they were sent. The Client relies on
// it to withdraw a creation whose caller gave up: the abort it sends is
// applied after the create, whether the create is still queued or was
// already granted.
type Transport interface {
	// Request sends req and waits for the store's reply: at most timeout,
	// and not after ctx is done (then it returns ctx.Err()). When it
	// returns without the reply, a reply that arrives later is passed to
	// late (unless late is nil), at most once, on a goroutine of its own
	// or of the transport; late may send through the transport but must
	// not wait for long.
	Request(ctx context.Context, req proto.Message, timeout time.Duration, late func(reply proto.Message)) (proto.Message, error)
	// Send sends a request that has no reply (release, delete, or an
	// abort whose answer nobody waits for).
	Send(msg proto.Message) error
}

// lateWindow is how long past its caller's own timeout a request still
// waits for the store's reply so that it can be given back. The store
// answers every request it received, so this only bounds the goroutine
// waiting for a request the store lost (its actor crashed on it).
const lateWindow = 5 * time.Minute

// Mailbox is the Transport to a store actor of this process: requests are
// actor messages, replies come back through futures.
type Mailbox struct {
	root *actor.RootContext
	pid  *actor.PID
}

var _ Transport = (*Mailbox)(nil)

// NewMailbox returns the transport to the store actor pid.
func NewMailbox(root *actor.RootContext, pid *actor.PID) *Mailbox {
	return &Mailbox{root: root, pid: pid}
}

// Send posts msg to the store (it never blocks).
func (m *Mailbox) Send(msg proto.Message) error {
	m.root.Send(m.pid, msg)
	return nil
}

// Request implements Transport.
func (m *Mailbox) Request(ctx context.Context, req proto.Message, timeout time.Duration, late func(proto.Message)) (proto.Message, error) {
	return m.start(req, timeout).wait(ctx.Done(), ctx.Err, timeout, late)
}

// start sends req at once (so requests keep their order) and returns the
// call waiting for its reply, for up to timeout plus lateWindow.
func (m *Mailbox) start(req proto.Message, timeout time.Duration) *mailboxCall {
	mc := &mailboxCall{done: make(chan struct{})}
	fut := m.root.RequestFuture(m.pid, req, timeout+lateWindow)
	go mc.run(fut)
	return mc
}

// mailboxCall is one request in flight: run waits for the future on its
// own goroutine; the caller waits on done, or gives up and leaves late.
type mailboxCall struct {
	done chan struct{}

	mu       sync.Mutex
	finished bool
	v        proto.Message
	err      error
	// abandoned: the caller gave up; late (may be nil) gets the reply.
	abandoned bool
	late      func(proto.Message)
}

func (mc *mailboxCall) run(fut actor.Future) {
	v, err := futureResult(fut)
	mc.mu.Lock()
	mc.finished, mc.v, mc.err = true, v, err
	late := mc.late
	if !mc.abandoned {
		late = nil
	}
	mc.mu.Unlock()
	close(mc.done)
	if late != nil && err == nil {
		late(v)
	}
}

// wait waits for the reply, at most timeout and until stop is closed
// (then it returns stopErr()). Giving up hands the reply to late; if the
// reply won the race, wait returns it.
func (mc *mailboxCall) wait(stop <-chan struct{}, stopErr func() error, timeout time.Duration, late func(proto.Message)) (proto.Message, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-mc.done:
		return mc.v, mc.err
	case <-stop:
		err = stopErr()
	case <-timer.C:
		err = errs.Unavailablef("object store did not answer within %v", timeout)
	}
	mc.mu.Lock()
	if mc.finished {
		mc.mu.Unlock()
		return mc.v, mc.err
	}
	mc.abandoned, mc.late = true, late
	mc.mu.Unlock()
	return nil, err
}

func futureResult(fut actor.Future) (proto.Message, error) {
	v, err := fut.Result()
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return nil, errs.Unavailablef("object store did not answer in time")
	case errors.Is(err, actor.ErrDeadLetter):
		return nil, errs.Unavailablef("object store is not running")
	case err != nil:
		return nil, errs.Unavailablef("object store: %v", err)
	}
	if _, dead := v.(*actor.DeadLetterResponse); dead {
		return nil, errs.Unavailablef("object store is not running")
	}
	m, ok := v.(proto.Message)
	if !ok {
		return nil, unexpected(v)
	}
	return m, nil
}
