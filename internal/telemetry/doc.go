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
package telemetry
