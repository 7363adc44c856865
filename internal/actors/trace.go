package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// w3c is used when the global propagator carries nothing (otel's default is
// an empty composite): atoll always propagates W3C trace context.
var w3c propagation.TextMapPropagator = propagation.TraceContext{}

func propagator() propagation.TextMapPropagator {
	p := otel.GetTextMapPropagator()
	if len(p.Fields()) == 0 {
		return w3c
	}
	return p
}

// InjectTrace returns the trace context of ctx as message headers
// (traceparent, tracestate and whatever else the global propagator writes),
// or nil when ctx carries no span.
func InjectTrace(ctx context.Context) map[string]string {
	carrier := propagation.MapCarrier{}
	propagator().Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	return carrier
}

// ExtractTrace returns ctx extended with the remote span context carried by
// h (as written by InjectTrace). h may be nil; ctx is then returned as is.
// In an actor, pass c.MessageHeader().
func ExtractTrace(ctx context.Context, h actor.ReadonlyMessageHeader) context.Context {
	if h == nil || h.Length() == 0 {
		return ctx
	}
	return propagator().Extract(ctx, headerCarrier{h})
}

// headerCarrier adapts a read-only message header to propagation.TextMapCarrier.
type headerCarrier struct {
	h actor.ReadonlyMessageHeader
}

func (c headerCarrier) Get(key string) string { return c.h.Get(key) }
func (c headerCarrier) Set(string, string)    {}
func (c headerCarrier) Keys() []string        { return c.h.Keys() }

// RequestFuture sends msg to pid as a request carrying the trace context of
// ctx in its headers and returns the future of the reply.
//
// Unlike RootContext.WithHeaders, which overwrites the headers of the shared
// root context in place (a data race when goroutines send with different
// headers) and whose headers RootContext.RequestFuture does not even put on
// the envelope, this builds one envelope per call and never mutates root, so
// it is safe for concurrent use from many goroutines. root's sender
// middleware still runs.
func RequestFuture(ctx context.Context, root *actor.RootContext, pid *actor.PID, msg any, timeout time.Duration) actor.Future {
	future := actor.NewFuture(root.ActorSystem(), timeout)
	root.Send(pid, &actor.MessageEnvelope{
		Header:  InjectTrace(ctx),
		Message: msg,
		Sender:  future.PID(),
	})
	return future
}
