package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/actors"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/node"
)

// The node processes of a chaos run are this program re-executed by
// internal/localcluster. atoll.Init would run them (node.RunFromEnv),
// loading the plan faultplan.EnvPlan names into an injector nobody
// outside the process can read. So that the run can count the faults
// they inject, runNode does what node.RunFromEnv does (start the node,
// print the ready line, serve until SIGTERM or until the cluster
// declares the node dead, stop) with the plan's injector made here, and
// writes that injector's counts to a file in the directory envFaultDir
// names: every faultLogInterval and once more when the node stops. A
// node killed by the plan (SIGKILL) leaves the counts of its last write.

const (
	// envFaultDir names the directory node processes write their fault
	// counts to; set, a node process is run by runNode.
	envFaultDir = "ATOLL_CHAOS_FAULT_DIR"
	// envFailureTimeout overrides the node's failure timeout.
	envFailureTimeout = "ATOLL_CHAOS_FAILURE_TIMEOUT"
	// faultLogInterval is how often a node process writes its counts.
	faultLogInterval = 100 * time.Millisecond
	// nodeStopTimeout bounds a node's graceful stop (node.RunFromEnv's).
	nodeStopTimeout = 10 * time.Second
)

// nodeFaults is what a node process writes: its injector's counts.
type nodeFaults struct {
	NodeID string `json:"node_id"`
	Role   string `json:"role"`
	// Stats counts every fault by kind; Rules counts them by rule (from
	// the injector's log, read every faultLogInterval: exact unless more
	// than actors.FaultLogCap faults happen in one interval).
	Stats actors.Stats          `json:"stats"`
	Rules map[string]*ruleCount `json:"rules"`
	Final bool                  `json:"final"` // written after the node stopped
}

// ruleCount is one rule's faults and what they hit.
type ruleCount struct {
	Kind  string         `json:"kind"`
	Count uint64         `json:"count"`
	Where map[string]int `json:"where"` // "Message@actor" -> count
}

// isChaosNode reports whether this process is a node process of a chaos
// run that runNode should serve.
func isChaosNode() bool { return os.Getenv(node.EnvNode) != "" && os.Getenv(envFaultDir) != "" }

// runNode serves as a node process and exits: 0 after a clean stop, 1 if
// the node failed or the cluster declared it dead, 2 for a bad
// environment (node.RunFromEnv's codes).
func runNode() {
	code, err := serveNode()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos node: %v\n", err)
	}
	os.Exit(code)
}

func serveNode() (int, error) {
	var cfg node.Config
	if err := json.Unmarshal([]byte(os.Getenv(node.EnvNode)), &cfg); err != nil {
		return 2, fmt.Errorf("%s: not a JSON node.Config: %w", node.EnvNode, err)
	}
	os.Unsetenv(node.EnvNode) // worker processes are not nodes
	dir := os.Getenv(envFaultDir)
	if s := os.Getenv(envFailureTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 2, fmt.Errorf("%s: %w", envFailureTimeout, err)
		}
		cfg.FailureTimeout = d
	}
	role := faultplan.Workers
	if cfg.Head {
		role = faultplan.Head
	}
	if path := os.Getenv(faultplan.EnvPlan); path != "" {
		p, err := faultplan.Load(path)
		if err != nil {
			return 2, err
		}
		cfg.Faults = p.Injector(role)
		fmt.Fprintf(os.Stderr, "chaos node: fault plan loaded: file %s, seed %d, %d rules, role %s\n", path, p.Seed, len(p.Rules), role)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return 1, err
	}
	b, _ := json.Marshal(node.NodeReady{NodeID: n.ID().String(), Address: n.Address(), PID: os.Getpid()})
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "%s%s\n", node.NodeReadyPrefix, b)
	_ = w.Flush()

	counts := &nodeFaults{NodeID: n.ID().String(), Role: string(role), Rules: map[string]*ruleCount{}}
	file := filepath.Join(dir, "faults-"+counts.NodeID+".json")
	var seen uint64
	write := func(final bool) {
		if cfg.Faults == nil {
			return
		}
		seen = counts.add(cfg.Faults, seen)
		counts.Final = final
		if err := writeJSONFile(file, counts); err != nil {
			fmt.Fprintf(os.Stderr, "chaos node: fault counts: %v\n", err)
		}
	}
	tick := time.NewTicker(faultLogInterval)
	defer tick.Stop()
	code := 0
serve:
	for {
		select {
		case <-tick.C:
			write(false)
		case <-ctx.Done():
			break serve
		case <-n.DeclaredDead():
			fmt.Fprintln(os.Stderr, "chaos node: the cluster declared this node dead; exiting")
			code = 1
			break serve
		case <-n.Drained():
			break serve
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), nodeStopTimeout)
	err = n.Stop(sctx)
	cancel()
	write(true)
	if err != nil {
		return 1, fmt.Errorf("stop: %w", err)
	}
	return code, nil
}

// add counts the injector's faults logged after seq seen and returns the
// last seq counted.
func (c *nodeFaults) add(fi *actors.FaultInjector, seen uint64) uint64 {
	c.Stats = fi.Stats()
	for _, e := range fi.Log() {
		if e.Seq <= seen {
			continue
		}
		seen = e.Seq
		r := c.Rules[e.Rule]
		if r == nil {
			r = &ruleCount{Kind: e.Kind.String(), Where: map[string]int{}}
			c.Rules[e.Rule] = r
		}
		r.Count++
		r.Where[shortMessage(e.Message)+"@"+e.Actor]++
	}
	return seen
}

// writeJSONFile writes v to file atomically (a reader never sees half).
func writeJSONFile(file string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
