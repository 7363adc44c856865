// Package telemetry holds atoll's OpenTelemetry plumbing: W3C trace context
// carried inside protobuf messages (never in user arguments), span links to
// the producers of consumed objects, an slog handler that stamps log lines
// with trace_id, span_id and task_id, and the OTLP exporter set up from the
// standard OTEL_* environment variables.
package telemetry
