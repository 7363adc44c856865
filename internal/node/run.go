package node

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// stopTimeout bounds a node process's graceful stop.
const stopTimeout = 10 * time.Second

// RunFromEnv runs the node nodeconfig.EnvNode describes (a JSON Config with Head or
// Address) until SIGTERM or SIGINT, then stops it and exits: 0 after a
// clean stop, 1 if the node failed to start or stop, 2 for a bad nodeconfig.EnvNode.
// Once the node serves it prints NodeReadyPrefix and a JSON NodeReady
// line on stdout. It never returns. atoll.Init calls it in a process
// started with nodeconfig.EnvNode (internal/testcluster starts test binaries this
// way), so the node's worker processes run that binary's functions.
func RunFromEnv() {
	cfg, err := nodeconfig.FromEnvNode(os.Getenv(nodeconfig.EnvNode))
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll node: %s: %v\n", nodeconfig.EnvNode, err)
		os.Exit(2)
	}
	os.Unsetenv(nodeconfig.EnvNode) // worker processes are not nodes
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, cfg, os.Stdout, os.Stderr))
}

// run starts the node, prints its ready line on stdout, serves until ctx
// ends and stops it; it returns the exit code.
func run(ctx context.Context, cfg nodeconfig.Config, stdout, stderr io.Writer) int {
	n, err := Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "atoll node: %v\n", err)
		return 1
	}
	b, _ := json.Marshal(NodeReady{NodeID: n.ID().String(), Address: n.Address(), PID: os.Getpid(), DashboardURL: n.DashboardURL(), MetricsAddress: n.MetricsAddress()})
	w := bufio.NewWriter(stdout)
	fmt.Fprintf(w, "%s%s\n", NodeReadyPrefix, b)
	_ = w.Flush()
	code := 0
	select {
	case <-ctx.Done():
	case <-n.DeclaredDead():
		msg := declaredDeadMessage
		if why := n.DeadReason(); why != "" {
			msg = "this node cannot go on: " + why + "; exiting"
		}
		fmt.Fprintf(stderr, "atoll node: %s\n", msg)
		code = 1
	case <-n.Drained():
		fmt.Fprintln(stderr, "atoll node: drained: leaving the cluster")
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	err = n.Stop(sctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "atoll node: stop: %v\n", err)
		return 1
	}
	return code
}

// declaredDeadMessage is what a node process says when it exits because
// the cluster declared it dead.
const declaredDeadMessage = "the cluster declared this node dead (it missed the failure timeout: paused, partitioned or overloaded); exiting"

// ErrDeclaredDead is returned by the node runners when the cluster
// declared the node dead while it ran.
var ErrDeclaredDead = errors.New("atoll: " + declaredDeadMessage)
