package gcs

import (
	"sync"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// SubscribeActorEvents calls fn with the new ActorInfo after every change
// of an actor. fn runs on the subscription's own goroutine, one event at a
// time in publication order; it must not block for long (hand the value to
// an actor or a channel). When SubscribeActorEvents returns, the server
// knows the interest, so no later change is missed. Call unsubscribe to
// stop; it is safe to call more than once.
func (c *Client) SubscribeActorEvents(fn func(*atollpb.ActorInfo)) (unsubscribe func(), err error) {
	return subscribe(c, ActorEventsSubject(c.opts.Prefix), func() *atollpb.ActorInfo { return &atollpb.ActorInfo{} }, fn)
}

// SubscribeNodeEvents is SubscribeActorEvents for nodes: fn receives the
// new NodeInfo after every registration or death of a node.
func (c *Client) SubscribeNodeEvents(fn func(*atollpb.NodeInfo)) (unsubscribe func(), err error) {
	return subscribe(c, NodeEventsSubject(c.opts.Prefix), func() *atollpb.NodeInfo { return &atollpb.NodeInfo{} }, fn)
}

func subscribe[M proto.Message](c *Client, subject string, newMsg func() M, fn func(M)) (func(), error) {
	sub, err := c.nc.Subscribe(subject, func(m *nats.Msg) {
		v := newMsg()
		if proto.Unmarshal(m.Data, v) != nil {
			return // not ours to interpret; events are best effort
		}
		fn(v)
	})
	if err != nil {
		return nil, errs.Unavailablef("gcs: subscribe %s: %v", subject, err)
	}
	if err := c.nc.FlushTimeout(c.opts.Timeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, errs.Unavailablef("gcs: subscribe %s: %v", subject, err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = sub.Unsubscribe() }) }, nil
}
