// Package telemetry holds atoll's OpenTelemetry plumbing: W3C trace context
// carried inside protobuf messages (never in user arguments), span links to
// the producers of consumed objects, an slog handler that stamps log lines
// with trace_id, span_id and task_id, and the OTLP exporter set up from the
// standard OTEL_* environment variables.
//
// A job's OTLP destination travels with its trace context (Inject,
// Extract, ExportFromEnv), and atoll's tracer (Tracer) starts each span on
// a provider exporting there (routes.go), so the spans nodes and worker
// processes make for a job reach the collector of its driver. Identity
// names the process (role, node, worker, job) in its spans' resources.
//
// # Where a job's spans go
//
// A job's spans are made in many processes: the driver ("submit"), each
// node's raylet ("queue", "schedule", "forward"), worker and actor
// processes ("execute", "fetch_args", "store_outputs", nested "submit").
// All reach the collector of the job's driver:
//
//   - The driver reads its OTEL_EXPORTER_OTLP_* settings at Init
//     (ExportFromEnv: endpoint URL, protocol, headers, compression,
//     timeout, OTEL_SERVICE_NAME, its job id) and makes them the process's
//     own destination (SetLocalExport).
//   - Inject puts the destination into every TraceContext it makes
//     (TraceContext.export): the context's, else the process's own.
//     Extract puts a received destination into the context it returns, so
//     whatever continues the trace (a raylet span, an execution, a nested
//     submission, which injects it again) carries it.
//   - The tracer (Tracer) starts each span on the provider of its
//     context's destination: the process's own when that is the process's
//     own destination (the driver) or there is none, else a provider from
//     routes, a table of at most 32 providers, one per (destination, job),
//     made on first use (the least recently used is evicted and flushed in
//     the background). A destination from the wire is validated
//     (ValidateExport: an http(s) URL, known protocol and compression, at
//     most 32 headers of 4 KiB); an invalid one leaves the spans with the
//     local provider. Each route's resource names this process's role,
//     node and worker and the job (atoll.job_id, the driver's service
//     name).
//   - Exits: a driver's Shutdown (also on SIGINT/SIGTERM) shuts its routes
//     and its provider down after the node stops; a node's Stop flushes
//     the routes (FlushRoutes) and shuts its own provider down; a worker
//     process shuts both down before it exits. Nodes and pooled workers
//     otherwise export a job's spans on their batcher's schedule (5 s).
//
// The node's own spans (the GCS's, and the "pull", "spill" and "restore"
// root spans of internal/node's activity.go) go to the node's own provider.
// Resources: service.name (OTEL_SERVICE_NAME, else "atoll-<role>"),
// atoll.role, atoll.node_id, atoll.worker_id, atoll.job_id (Identity, set
// by the driver at Init, a worker process at start, a node otherwise).
//
// # Goroutines and locks
//
// One goroutine per OpenTelemetry batch span processor: the process's own
// provider and each provider in routes, until shut down. routeTable.mu
// guards the routes (a provider is created under it, which does no I/O;
// evicted ones are shut down outside it) and identityMu the process's
// identity; both are leaves.
package telemetry
