// Package actors holds atoll's actor-system plumbing on top of protoactor-go:
// an actor system whose logging goes to slog ([NewSystem]), a Ray-style
// restart-limit supervisor ([NewRestartLimitStrategy]), W3C trace-context
// propagation through message envelopes ([InjectTrace], [ExtractTrace],
// [RequestFuture]) and a fault-injection receiver middleware
// ([FaultInjector]) that users install to test their own systems.
//
// Every long-lived atoll component (raylet, object store, spiller, GCS
// tables, workers) is a supervised protoactor actor built with these pieces.
package actors
