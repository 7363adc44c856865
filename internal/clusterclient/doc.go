// Package clusterclient talks to a running cluster from outside: what
// the CLI (`atoll status|list|memory|timeline|amm|drain`), the head's
// dashboard and the SDK's cluster calls ask.
//
// It owns the way in: the cluster address and its resolution
// (ResolveAddress: "" and "auto" read nodeconfig.AddressFile) and the
// connection to the cluster's NATS server with a process's credentials
// (Dial, DialAs; a connection the server refuses a subject is closed at
// once, LastPermissionViolation says why). Over such a connection it
// asks the GCS and the nodes: the nodes with their latest load reports
// (GetStatus, StatusOn), the GCS's tables (ListNodes, ListActors,
// ListJobs), the task attempts the nodes remember (GetTimeline,
// TimelineOn), the end of a node's log (NodeLog), the head's Active
// Memory Manager (ControlAMM, DrainNode) and a node by a prefix of its
// id (ResolveNode). It keeps no state between calls.
//
// It does not serve any of these: the GCS (internal/gcs), the nodes'
// gateways (internal/cluster) and the node assembly (internal/node)
// answer them. Submitted jobs and their logs have their own client, in
// internal/jobs.
package clusterclient
