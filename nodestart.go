package atoll

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
	"github.com/atoll-runtime/atoll/node"
	"github.com/atoll-runtime/atoll/objectstore"
)

func startNode(ctx context.Context, nc NodeConfig) (*Node, error) {
	if !nc.Head && nc.Address == "" {
		return nil, errs.Invalidf("NodeConfig: a node either is the head (Head) or joins one (Address)")
	}
	if nc.Head && nc.Address != "" {
		return nil, errs.Invalidf("NodeConfig: Head and Address are exclusive (the head is the address others join)")
	}
	cpus := nc.NumCPUs
	switch {
	case cpus == NoCPUs:
		cpus = 0
	case cpus < 0:
		return nil, errs.Invalidf("NodeConfig.NumCPUs %g: must not be negative (NoCPUs for none)", nc.NumCPUs)
	case cpus == 0:
		cpus = float64(goruntime.NumCPU())
	}
	if !nc.RandomPorts {
		nc.Port = orDefault(nc.Port, node.DefaultPort)
		nc.GossipPort = orDefault(nc.GossipPort, node.DefaultGossipPort)
		nc.TransferPort = orDefault(nc.TransferPort, node.DefaultTransferPort)
	}
	if nc.NodeIP == "" {
		nc.NodeIP = "127.0.0.1"
	}
	cfg := config{
		node: &nc, numCPUs: cpus, resources: nc.Resources, storeMemory: nc.ObjectStoreMemory,
		logger: nc.Logger, sessionDir: nc.SessionDir, workerMode: ProcessWorkers, failureTimeout: nc.FailureTimeout,
	}
	rt := &core{cfg: cfg, nodeID: ids.NewNodeID(), jobID: ids.NewJobID(), workerID: ids.NewWorkerID(), putTask: ids.NewTaskID()}
	if err := rt.start(ctx); err != nil {
		_ = rt.stop(context.Background())
		return nil, err
	}
	return &Node{rt: rt}, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// clustered reports whether this core is a node of a multi-node cluster
// (a node started by StartNode, or a driver given an address).
func (rt *core) clustered() bool { return rt.cfg.node != nil || rt.cfg.address != "" }

// runsGCS reports whether this process hosts the control plane: the
// embedded default or a head node.
func (rt *core) runsGCS() bool {
	if n := rt.cfg.node; n != nil {
		return n.Head
	}
	return rt.cfg.address == ""
}

// connectControlPlane starts the embedded NATS server (embedded default,
// head) or connects to the cluster's.
func (rt *core) connectControlPlane() error {
	cfg := rt.cfg
	storeDir := filepath.Join(rt.sessionDir, "nats")
	name := "atoll-" + rt.nodeID.Short()
	var url string
	switch n := cfg.node; {
	case n != nil && n.Head && n.NATSURL != "":
		url = n.NATSURL
	case n != nil && n.Head:
		var err error
		rt.nats, err = natsembed.Start(natsembed.Config{Host: n.NodeIP, Port: n.Port, StoreDir: storeDir, ServerName: name})
		if err != nil {
			return fmt.Errorf("atoll: embedded NATS on %s:%d: %w", n.NodeIP, n.Port, err)
		}
		rt.clusterAddress = rt.nats.Addr().String()
	case n != nil:
		url = n.Address
	case cfg.address != "":
		url = cfg.address
	default:
		var err error
		if rt.nats, err = natsembed.Start(natsembed.Config{Port: natsembed.NoListener, StoreDir: storeDir, ServerName: name}); err != nil {
			return fmt.Errorf("atoll: embedded NATS: %w", err)
		}
	}
	var err error
	if url == "" {
		if rt.nc, err = rt.nats.Connect(); err != nil {
			return fmt.Errorf("atoll: connect to embedded NATS: %w", err)
		}
		return nil
	}
	if rt.nc, url, err = node.DialCluster(url, name, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond)); err != nil {
		return err
	}
	if rt.clusterAddress == "" {
		rt.clusterAddress = strings.TrimPrefix(url, "nats://")
	}
	return nil
}

// newGateway prepares this node's connection to the cluster's other
// nodes (cluster.New; Start follows once the raylet runs).
func (rt *core) newGateway(info *atollpb.NodeInfo) *cluster.Gateway {
	gc := cluster.Config{
		NodeID: rt.nodeID, Conn: rt.nc, System: rt.system, Raylet: rt.system.NewLocalPID("raylet"), Store: rt.storePID,
		StoreClient: objectstore.NewClient(rt.system.Root, rt.storePID, rt.arena, ids.NewWorkerID()),
		GCS:         rt.gcsClient, NodeIP: rt.cfg.nodeIP, FailureBudget: rt.cfg.failureTimeout, Node: info,
		Logger: quiet(rt.log), MaxInFlight: max(rt.arena.Size()/4, 64<<20),
	}
	if n := rt.cfg.node; n != nil {
		gc.NodeIP, gc.TransferPort, gc.GossipPort = n.NodeIP, n.TransferPort, n.GossipPort
	}
	return cluster.New(gc)
}

// runNodeFromEnv runs the node EnvNode describes until SIGTERM or SIGINT
// and exits (internal/testcluster starts test binaries this way).
func runNodeFromEnv() {
	var nc NodeConfig
	if err := json.Unmarshal([]byte(os.Getenv(node.EnvNode)), &nc); err != nil {
		fmt.Fprintf(os.Stderr, "atoll node: %s: %v\n", node.EnvNode, err)
		os.Exit(2)
	}
	os.Unsetenv(node.EnvNode) // worker processes are not nodes
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := StartNode(ctx, nc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll node: %v\n", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(node.NodeReady{NodeID: n.ID(), Address: n.Address(), PID: os.Getpid()})
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "%s%s\n", node.NodeReadyPrefix, b)
	_ = w.Flush()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = n.Stop(sctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll node: stop: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
