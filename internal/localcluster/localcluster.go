// Package localcluster starts a cluster of node processes on this machine
// for the samples and experiments that need more than one node (Ray's
// cluster_utils.Cluster): each node is this very program, re-executed
// with node.EnvNode, so its worker processes run the program's functions.
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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/node"
)

// Options configure a cluster; zero fields take the defaults.
type Options struct {
	// Nodes is the number of nodes (default 3); the first is the head.
	Nodes int
	// NumCPUs is every node's CPU slots (default 1).
	NumCPUs float64
	// ObjectStoreMemory is every node's store size (default 256 MiB).
	ObjectStoreMemory uint64
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
	// Nodes are the node ids, the head's first.
	Nodes  []string
	dir    string
	ownDir bool
	procs  []*exec.Cmd
	done   []chan struct{}
}

// Start starts the head, then the other nodes, and waits until each is
// ready. On failure it stops what it started.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.NumCPUs == 0 {
		opts.NumCPUs = 1
	}
	if opts.ObjectStoreMemory == 0 {
		opts.ObjectStoreMemory = 256 << 20
	}
	if opts.Nodes < 1 || opts.NumCPUs < 0 {
		return nil, errs.Invalidf("localcluster: %d nodes of %g CPUs", opts.Nodes, opts.NumCPUs)
	}
	c := &Cluster{dir: opts.Dir}
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
		cfg := node.Config{NumCPUs: opts.NumCPUs, ObjectStoreMemory: opts.ObjectStoreMemory, Head: i == 0,
			Address: c.Address, NodeIP: "127.0.0.1", RandomPorts: true, SessionDir: filepath.Join(c.dir, fmt.Sprintf("n%d", i))}
		if err := c.launch(ctx, exe, i, cfg, opts.Env); err != nil {
			c.Stop()
			return nil, fmt.Errorf("localcluster: node %d: %w", i, err)
		}
	}
	return c, nil
}

// launch starts node i and waits for its ready line.
func (c *Cluster) launch(ctx context.Context, exe string, i int, cfg node.Config, env []string) error {
	if err := os.MkdirAll(cfg.SessionDir, 0o755); err != nil {
		return err
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("node%d.log", i)))
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), env...), node.EnvNode+"="+string(cfgJSON))
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	done := make(chan struct{})
	ready := make(chan node.NodeReady, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, node.NodeReadyPrefix); ok {
				var r node.NodeReady
				if json.Unmarshal([]byte(rest), &r) == nil {
					ready <- r
				}
			}
			fmt.Fprintln(logFile, line)
		}
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	c.procs, c.done = append(c.procs, cmd), append(c.done, done)
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case r := <-ready:
		c.Nodes = append(c.Nodes, r.NodeID)
		if i == 0 {
			c.Address = r.Address
		}
		return nil
	case <-done:
		return errors.New("exited before it was ready (see " + logFile.Name() + ")")
	case <-timer.C:
		return errors.New("not ready within " + readyTimeout.String())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops every node (SIGTERM, then SIGKILL after 15 s), the head
// last, and removes the directory Start made.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done[i]:
		case <-time.After(stopTimeout):
			_ = c.procs[i].Process.Kill()
			<-c.done[i]
		}
	}
	if c.ownDir {
		_ = os.RemoveAll(c.dir)
	}
}
