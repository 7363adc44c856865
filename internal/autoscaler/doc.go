// Package autoscaler sizes a cluster to its work: the head's autoscaler
// adds nodes while work waits and removes nodes idle past a timeout.
//
// It has three parts:
//
//   - Decide (policy.go), the pure decision: from a Policy (the node
//     types with their min and max, the upscaling speed, the idle and
//     launch timeouts) and a Snapshot (the nodes with what they hold and
//     since when they are idle, the instances launched, the demand: tasks
//     and actors not started, placement groups not placed,
//     request_resources), what to launch, drain and terminate, and the
//     demand left unmet, infeasible when no node type could hold it. It
//     reads no clock and does no I/O; testdata/policy holds its scripts.
//   - the Autoscaler's actor (autoscaler.go), its shell on the head: it
//     follows node events and load reports, runs a round every interval,
//     and carries the decision out off the actor: launches and
//     terminations through a NodeProvider, drains through the head's
//     Active Memory Manager (a drained node's objects are copied
//     elsewhere before it leaves; a node running a task or holding a
//     bundle does not leave). It answers its status, request_resources
//     and `atoll down`'s shutdown over NATS.
//   - the cluster file (config.go, YAML, unknown keys refused) and the
//     NodeProvider interface with its registry (provider.go); package
//     local is the provider of node processes on this machine.
package autoscaler
