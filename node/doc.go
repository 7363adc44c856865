// Package node runs an atoll cluster node inside your own program: a
// cluster's head, or a node that joins one, as `atoll start` runs them.
//
//	head, err := node.Start(ctx, node.Config{Head: true})
//	...
//	defer head.Stop(context.Background())
//	fmt.Println("cluster address:", head.Address(), "secret:", head.Secret())
//
// and on another machine (or the same one, with free ports):
//
//	n, err := node.Start(ctx, node.Config{Address: addr, Credentials: node.Credentials{Secret: secret}})
//
// Zero fields of Config take the defaults `atoll start --help` shows
// (the node's CPU count, 30% of RAM for the object store, the
// well-known ports), except that a node started here serves no
// Prometheus metrics (MetricsPort) and, on a head, no dashboard
// (Dashboard) unless asked. The ATOLL_* environment variables apply as
// they do to `atoll start` (the credentials' ATOLL_SECRET and the like,
// the head's ATOLL_AMM*).
//
// A driver does not need this package: atoll.Init runs the node a
// program needs (an embedded single node, or with atoll.WithAddress a
// small node of its own in a running cluster). Use it to run the
// cluster's nodes from Go instead of `atoll start`: in a service of your
// own, or in tests.
//
// A node's worker processes run each job's own driver binary (or
// Config.WorkerBinary), not the program that started the node.
package node
