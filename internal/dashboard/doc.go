// Package dashboard is the cluster's web dashboard: an HTTP server the
// head runs (`atoll start --head --dashboard-port 8265`,
// node.Config.Dashboard) with a single page and the JSON API it polls.
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
package dashboard
