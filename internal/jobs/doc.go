// Package jobs is the job service of a cluster node and its client:
// `atoll job submit|status|stop|logs` and `atoll logs`.
//
// The service (StartService; service.go) runs on every cluster node but
// a driver's, as one actor of the node's actor system. It receives files
// in chunks over NATS (files.go: a driver's binary, installed
// content-addressed in the machine's state directory so that the nodes
// of a machine share one copy, and a working directory archive), runs a
// binary as a job's driver (a child process in a process group of its
// own, with the cluster's address and credentials in its environment)
// and records the job in the GCS (PENDING, RUNNING, then SUCCEEDED,
// FAILED or STOPPED), stops one, and serves reads of logs from any
// offset (logs.go): the node's own, its jobs' and its worker processes'.
// The head also fails the jobs of nodes that die.
//
// The client (client.go) ships a binary to every live node that lacks
// it and submits it (Submit), finds and stops jobs (Get, Stop) and reads
// or follows logs (ReadLog, FollowLog).
//
// It does not capture worker processes' output (the node assembly does,
// internal/node's workerlogs.go, and tells the service where each
// worker's log is: Config.WorkerLog), nor does it run a driver's own job
// entry (the SDK records that).
package jobs
