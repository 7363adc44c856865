// Package raylet is the per-node manager: it queues tasks, accounts the
// node's resources (CPU, memory, custom), dispatches tasks to worker slots
// and hosts actors, each in a worker of its own under a supervisor that
// restarts it up to its max_restarts.
//
// The raylet is a protoactor-go actor; its scheduling decisions come from
// pure functions in policy.go, so they can be tested without actors. User
// code runs through the Executor interface, which the atoll package
// implements: the raylet knows nothing about functions, codecs or the
// object store.
package raylet
