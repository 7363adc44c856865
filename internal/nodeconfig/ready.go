package nodeconfig

// NodeReadyPrefix starts the line a node started through EnvNode prints
// once it is ready.
const NodeReadyPrefix = "ATOLL_NODE_READY "

// NodeReady describes a started node: the JSON after NodeReadyPrefix, and
// what `atoll start` records for `atoll stop`. (It lives here, with the
// settings a node process is started with, so that the packages starting
// node processes need not import the node itself.)
type NodeReady struct {
	NodeID string `json:"node_id"`
	// Address is the cluster address (the head's NATS host:port) to give
	// other nodes and drivers.
	Address string `json:"address"`
	PID     int    `json:"pid"`
	// DashboardURL is the head's dashboard (http://host:port), if it
	// serves one.
	DashboardURL string `json:"dashboard_url,omitempty"`
	// MetricsAddress is where the node serves Prometheus metrics
	// (host:port, GET /metrics); empty when it serves none.
	MetricsAddress string `json:"metrics_address,omitempty"`
}
