// Package nodemetrics publishes a node's figures as OpenTelemetry
// metrics and, when asked, serves them to Prometheus.
//
// A node starts one Metrics (Start) once its actors run. Its observable
// instruments (object store bytes and spilling, the raylet's queue,
// running tasks and workers, transfers from other nodes, the NATS
// connection's traffic and, on a node running the GCS, the GCS's tables
// by state) are read from the node through a Source when a reader
// collects; its task counters and latency histograms are fed by the
// raylet's finished attempts (TaskFinished), with at most 500 task names
// as labels. Every instrument goes to the configured meter provider and,
// when the node serves Prometheus (GET /metrics on Config.Host:Port,
// through OpenTelemetry's Prometheus exporter) or the standard
// OTEL_EXPORTER_OTLP_* variables ask for OTLP metrics, to a provider of
// the node's own (prometheus.go).
//
// It owns the instruments, the node's own meter provider and the
// metrics HTTP server; it reads the node's state only through Source and
// changes nothing in it. It does not validate its port (the node's
// settings are checked in internal/nodeconfig) nor trace anything (the
// node's spans are internal/node's activity.go and the raylet's).
package nodemetrics
