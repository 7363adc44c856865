// Package dashboard is the cluster's web dashboard: an HTTP server the
// head runs (`atoll start --head --dashboard-port 8265`,
// nodeconfig.Config.Dashboard) with a single page and the JSON API it
// polls every 2 s.
//
// The page (static/, embedded with go:embed: plain HTML, CSS and
// JavaScript, no build step, nothing from a CDN) has seven views: the
// cluster overview (nodes, resources, store use and spilling, with live
// charts drawn from the samples the page keeps while it is open), jobs,
// tasks (counts by state and a filterable table, each task linked to its
// trace where the driver traced it), actors (state, restarts, death
// cause), memory per node, the timeline of recent task attempts and each
// node's log.
//
// The dashboard keeps no state of its own: every API request asks its
// Source, which the head implements with the queries behind the CLI
// (`atoll status`, `list`, `memory`, `timeline`) on its own connection, so
// the page and the CLI never disagree. The API (api.go) answers GET
// requests only, under /api/, with snake_case JSON and hex ids; every
// list it returns is bounded (a limit parameter, capped), at most
// maxConcurrent requests are served at once and each has a deadline; the
// server has read, write and idle timeouts (server.go).
//
// # Requests
//
//	browser -- GET /api/tasks --> head: dashboard.Server (net/http)
//	                                 | Source.Status and Source.Timeline, concurrently
//	                                 +-> clusterclient.StatusOn: GCS ListNodes + <prefix>.load.* (<= 2 s)
//	                                 +-> clusterclient.TimelineOn: <prefix>.node.<id>.timeline, each live node (<= 5 s)
//	        <-- JSON (snake_case, hex ids, newest first, <= limit) --+
//	browser -- GET /api/logs/<id> --> head -- <prefix>.node.<id>.logs --> node: end of its log file
//	browser -- GET /api/logs/job/<id> --> head: GCS ListJobs (the job's node)
//	                                 -- <prefix>.node.<node>.logread --> that node: end of the job's log
//
// The API is /api/cluster, /api/jobs, /api/tasks, /api/actors,
// /api/timeline, /api/logs/{node} and /api/logs/job/{job} (a submitted
// job's log). The head implements Source
// (internal/node's dashboard.go) with the queries behind `atoll status`,
// `memory`, `list` and `timeline` (package clusterclient) on its own NATS
// connection. The live charts are the samples the page keeps while it is
// open (its last 150 polls of /api/cluster); nothing is sampled
// server-side.
// Task events carry what the page links by: the raylet records each
// attempt's job id and the trace id of its submit span in its timeline,
// and Config.TraceURL (--dashboard-trace-url) turns a trace id into a
// link.
//
// # Bounds and failures
//
// The server listens on Config.Addr (127.0.0.1 unless the node is told
// another host) and answers GET (and HEAD)
// only (405 otherwise, 404 for unknown paths), with ReadHeaderTimeout 5 s,
// ReadTimeout 10 s, WriteTimeout 30 s, IdleTimeout 2 min and 16 KiB of
// headers. At most 8 API requests are served at once (a ninth waits up to
// 5 s, then gets 503), each with a 15 s deadline. Every list is capped by
// a limit parameter (tasks 5,000, timeline 20,000, actors 10,000, jobs
// 5,000) and a log by bytes (1 MiB). Parameters are validated (hex ids,
// known states, numbers in range, text of at most 256 bytes): a bad one is
// a 400 with {"error": ...}; a node that does not answer its log request
// is a 404 (no such live node) or a 503. A node that does not answer its
// timeline request in time is left out, as for `atoll timeline`. The page
// builds its DOM from text only (no HTML from data), and the server sends
// a Content-Security-Policy that allows only the page's own assets.
//
// The server is not an actor: it holds nothing a restart could lose, and
// net/http gives each connection its goroutine (plus, per API request, one
// helper goroutine while it runs two queries at once). The head starts it
// last and closes it first (requests in progress get the stop's
// deadline). A port in use fails the head's start with ErrUnavailable.
package dashboard
