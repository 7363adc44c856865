// Package localcluster starts a cluster of node processes on this machine
// for the samples and experiments that need more than one node (Ray's
// cluster_utils.Cluster): each node is this very program, re-executed
// with nodeconfig.EnvNode, so its worker processes run the program's functions.
// The program must hand such a process to atoll.Init first thing:
//
//	if atoll.IsWorker() {
//		_ = atoll.Init(ctx) // serves as a node or worker; never returns
//	}
//
// Tests use internal/testcluster, which adds test logging and fault
// injection on top of the same launch.
package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Options configure a cluster; zero fields take the defaults.
type Options struct {
	// Nodes is the number of nodes (default 3); the first is the head.
	Nodes int
	// Node is every node's settings. Zero NumCPUs and ObjectStoreMemory
	// take 1 CPU and 256 MiB (small nodes for experiments on one
	// machine), other zero fields the node's own defaults. The cluster
	// decides each node's Head, Address, NodeIP, ports (free ones),
	// SessionDir, GCSDir, FaultInjection (on: experiments kill and cut
	// nodes) and secret; NATSURL and the dashboard are the head's only.
	Node nodeconfig.Config
	// Env is added to every node's environment ("KEY=value").
	Env []string
	// Dir holds the nodes' logs and session directories (default: a new
	// temporary directory, removed by Stop).
	Dir string
}

// readyTimeout bounds the wait for a node's ready line; stopTimeout a
// node's graceful stop before it is killed.
const (
	readyTimeout = time.Minute
	stopTimeout  = 15 * time.Second
)

// Cluster is a running local cluster.
type Cluster struct {
	// Address is the head's cluster address (atoll.WithAddress).
	Address string
	// Secret is the cluster secret (hex) every node holds
	// (atoll.WithSecret).
	Secret string
	// Nodes are the node ids, the head's first.
	Nodes  []string
	dir    string
	ownDir bool
	procs  []*Process
}

// Start starts the head, then the other nodes, and waits until each is
// ready. On failure it stops what it started.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Node.NumCPUs == 0 {
		opts.Node.NumCPUs = 1
	}
	if opts.Node.ObjectStoreMemory == 0 {
		opts.Node.ObjectStoreMemory = 256 << 20
	}
	if opts.Nodes < 1 || opts.Node.NumCPUs < 0 {
		return nil, errs.Invalidf("localcluster: %d nodes of %g CPUs", opts.Nodes, opts.Node.NumCPUs)
	}
	secret, err := clusterkey.Generate()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: opts.Dir, Secret: secret.Hex()}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "atoll-localcluster-")
		if err != nil {
			return nil, err
		}
		c.dir, c.ownDir = d, true
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for i := range opts.Nodes {
		cfg := opts.Node
		cfg.Head, cfg.Address, cfg.NodeIP, cfg.RandomPorts = i == 0, c.Address, "127.0.0.1", true
		cfg.Port, cfg.GossipPort, cfg.TransferPort = 0, 0, 0
		cfg.SessionDir, cfg.GCSDir = filepath.Join(c.dir, fmt.Sprintf("n%d", i)), ""
		cfg.Credentials = nodeconfig.Credentials{Secret: c.Secret}
		if cfg.Head {
			cfg.FaultInjection = true // the experiments kill and cut nodes
			if cfg.NATSURL == "" {
				cfg.GCSDir = filepath.Join(c.dir, "gcs") // the cluster's own, gone with it
			}
		} else {
			cfg.NATSURL, cfg.Dashboard, cfg.DashboardTraceURL = "", false, "" // the head's
		}
		cfg.DashboardPort = 0
		if err := c.launch(ctx, exe, i, cfg, opts.Env); err != nil {
			c.Stop()
			return nil, fmt.Errorf("localcluster: node %d: %w", i, err)
		}
	}
	return c, nil
}

// launch starts node i and waits for its ready line.
func (c *Cluster) launch(ctx context.Context, exe string, i int, cfg nodeconfig.Config, env []string) error {
	if err := os.MkdirAll(cfg.SessionDir, 0o755); err != nil {
		return err
	}
	nodeEnv, err := cfg.Environ()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	env = append(append(FilterEnv(os.Environ(), nodeconfig.EnvNode), env...), nodeEnv)
	p, ready, err := StartProcess(exe, nil, env, filepath.Join(c.dir, fmt.Sprintf("node%d.log", i)), readyTimeout)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	c.Nodes = append(c.Nodes, ready.NodeID)
	if i == 0 {
		c.Address = ready.Address
	}
	return nil
}

// Stop stops every node (SIGTERM, then SIGKILL after 15 s), the head
// last, and removes the directory Start made.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].Stop(stopTimeout)
	}
	if c.ownDir {
		_ = os.RemoveAll(c.dir)
	}
}
