package workerconn

// Requests and replies over a connection: a call waits for the frame
// that replies to its id, and a caller that gives up leaves its call to
// a Late handler or drops the reply.

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Reply answers the request with id to.
func (c *Conn) Reply(to uint64, f *atollpb.Frame) error {
	f.Id, f.ReplyTo = 0, to
	return c.write(true, f)
}

// Call sends a request and waits for its reply, ctx, or the connection's
// end. A reply that arrives after the caller gave up is dropped.
func (c *Conn) Call(ctx context.Context, f *atollpb.Frame) (*atollpb.Frame, error) {
	return c.CallLate(ctx, f, nil)
}

// CallLate is Call for requests whose replies grant something the caller
// must give back (a pin, a block of memory): if ctx ends before the reply,
// the call is abandoned rather than forgotten, and its reply, when it
// arrives, goes to late (on the reader goroutine; it must not block). If
// the reply won the race against ctx, CallLate returns it. late is not
// called if the connection ends first (the peer then reclaims what it
// granted), nor when more than MaxAbandoned calls are abandoned at once
// (the call is forgotten, as by Call). A nil late makes it Call.
func (c *Conn) CallLate(ctx context.Context, f *atollpb.Frame, late Late) (*atollpb.Frame, error) {
	id := c.nextID.Add(1)
	pc := &call{ch: make(chan *atollpb.Frame, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = pc
	c.mu.Unlock()
	f.Id = id
	if err := c.write(true, f); err != nil {
		c.forget(id)
		return nil, err
	}
	c.Wake()
	// The reply comes through the reader: if this goroutine is the reader
	// (a handler running a task inline), another must read.
	c.Handoff()
	select {
	case r := <-pc.ch:
		return r, nil
	case <-ctx.Done():
		if r, ok := c.abandon(id, pc, late); ok {
			return r, nil
		}
		return nil, ctx.Err()
	case <-c.done:
		c.forget(id)
		return nil, c.Err()
	}
}

// abandon hands the pending call id over to late. If the reader already
// took the call's reply, it returns that reply instead.
func (c *Conn) abandon(id uint64, pc *call, late Late) (*atollpb.Frame, bool) {
	c.mu.Lock()
	if _, waiting := c.pending[id]; !waiting {
		c.mu.Unlock()
		// Only the reader removes a call nobody abandoned: it is
		// delivering the reply (pc.ch is buffered).
		return <-pc.ch, true
	}
	if late == nil || c.abandoned >= MaxAbandoned || c.err != nil {
		delete(c.pending, id)
	} else {
		pc.late = late
		c.abandoned++
	}
	c.mu.Unlock()
	return nil, false
}

func (c *Conn) forget(id uint64) {
	c.mu.Lock()
	if pc := c.pending[id]; pc != nil && pc.late != nil {
		c.abandoned--
	}
	delete(c.pending, id)
	c.mu.Unlock()
}
