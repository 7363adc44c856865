package gcs

import (
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// natsHeaderCarrier adapts nats.Header to propagation.TextMapCarrier, so
// W3C trace context travels in NATS message headers.
type natsHeaderCarrier nats.Header

var _ propagation.TextMapCarrier = natsHeaderCarrier(nil)

// Get returns the first value of key.
func (c natsHeaderCarrier) Get(key string) string { return nats.Header(c).Get(key) }

// Set replaces the values of key. Setting on a nil carrier is a no-op.
func (c natsHeaderCarrier) Set(key, value string) {
	if c != nil {
		nats.Header(c).Set(key, value)
	}
}

// Keys lists the header names present.
func (c natsHeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// propagatorOrDefault returns p, or the global propagator, or W3C
// TraceContext when the global one is the default no-op (it has no fields).
func propagatorOrDefault(p propagation.TextMapPropagator) propagation.TextMapPropagator {
	if p != nil {
		return p
	}
	if g := otel.GetTextMapPropagator(); len(g.Fields()) > 0 {
		return g
	}
	return propagation.TraceContext{}
}
