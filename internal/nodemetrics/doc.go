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
// # Instruments
//
// Observable (read in one callback when a reader collects, so nothing
// polls when nobody collects; the callback asks the store for its Stats
// and the raylet for its State, both answered by their actors):
// atoll.object_store.used, capacity, pinned, objects, disk_used (live
// objects in spill files now), spilled_total and restored_total; atoll.raylet.queued_tasks,
// running_tasks and workers; atoll.transfer.pulled_objects and pulled
// (from other nodes); atoll.nats.messages, traffic and reconnects (the
// connection's Stats); on the node running the GCS, atoll.gcs.nodes,
// actors and jobs by state (three list requests; every state but the
// enum's unspecified one has a series, 0 when empty, named as a label
// value: NODE_ALIVE is alive, ACTOR_PENDING_CREATION pending_creation). Synchronous, fed by
// TaskFinished for every finished attempt, actor call and creation the
// raylet's timeline records (raylet.Config.OnTaskEvent, on its
// goroutine): atoll.tasks.finished by name and outcome, and
// atoll.task.duration, a histogram from 1 ms to 5 min. Names past the
// 500th share the label "other" (taskNames, a set under a leaf mutex).
//
// Every figure has the attribute node_id; the others are task_name,
// outcome, direction and state. Attribute names are Prometheus labels
// as they are (snake_case, without the metric names' atoll prefix) and
// their values, but the node's id and the task names, are lowercase
// snake_case.
//
// # Prometheus and OTLP
//
// The node owns a second meter provider when something reads it: with
// Config.Port an OpenTelemetry Prometheus exporter on a registry of its
// own (exporterOptions: Prometheus names with one unit suffix and _total
// on counters only, no otel_scope_* labels, no target_info series), served by an http.Server on Host:Port (GET /metrics only; header,
// read, write and idle timeouts, 16 KiB of headers, at most 4 scrapes at
// once; one Serve goroutine from Start to Stop), and with
// OTEL_EXPORTER_OTLP_* a periodic OTLP reader (a goroutine of its own). The
// same instruments are registered on both providers. BestEffort (the
// CLI's default port) turns a port already taken into a warning. Stop
// unregisters the callbacks and shuts the server and the provider down (a
// last OTLP export, at most 5 s).
//
// It owns the instruments, the node's own meter provider and the
// metrics HTTP server; it reads the node's state only through Source and
// changes nothing in it. It does not validate its port (the node's
// settings are checked in internal/nodeconfig) nor trace anything (the
// node's spans are internal/node's activity.go and the raylet's).
package nodemetrics
