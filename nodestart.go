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
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/cluster"
	"github.com/atoll-runtime/atoll/gcs"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
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
		nc.Port = orDefault(nc.Port, DefaultPort)
		nc.GossipPort = orDefault(nc.GossipPort, DefaultGossipPort)
		nc.TransferPort = orDefault(nc.TransferPort, DefaultTransferPort)
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

// dialCluster connects to the NATS server of the cluster at address (as
// ResolveAddress reads it) and returns the connection and its URL.
func dialCluster(address, name string, opts ...nats.Option) (*nats.Conn, string, error) {
	url, err := ResolveAddress(address)
	if err != nil {
		return nil, "", err
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name(name)}, opts...)...)
	if err != nil {
		return nil, "", errs.Unavailablef("cannot reach the cluster at %s: %v", url, err)
	}
	return nc, url, nil
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
	if rt.nc, url, err = dialCluster(url, name, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond)); err != nil {
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
	if err := json.Unmarshal([]byte(os.Getenv(EnvNode)), &nc); err != nil {
		fmt.Fprintf(os.Stderr, "atoll node: %s: %v\n", EnvNode, err)
		os.Exit(2)
	}
	os.Unsetenv(EnvNode) // worker processes are not nodes
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := StartNode(ctx, nc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll node: %v\n", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(NodeReady{NodeID: n.ID(), Address: n.Address(), PID: os.Getpid()})
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "%s%s\n", NodeReadyPrefix, b)
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

// clusterStatus asks the GCS for the nodes and listens to their load
// reports.
func clusterStatus(ctx context.Context, address string) (*ClusterStatus, error) {
	nc, url, err := dialCluster(address, "atoll-status")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	var mu sync.Mutex
	loads := map[ids.NodeID]*atollpb.NodeLoad{}
	got := make(chan struct{}, 1)
	sub, err := nc.Subscribe(cluster.DefaultPrefix+".load.*", func(m *nats.Msg) {
		var l atollpb.NodeLoad
		if proto.Unmarshal(m.Data, &l) == nil {
			mu.Lock()
			loads[ids.MustFromBytes(l.NodeId)] = &l
			mu.Unlock()
			select {
			case got <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return nil, errs.Unavailablef("subscribe to load reports: %v", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	nodes, err := gcs.NewClient(nc, gcs.ClientOptions{}).ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	// Wait until every live node reported once (they report every 100 ms),
	// at most 2 s.
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for {
		mu.Lock()
		missing := 0
		for _, n := range nodes {
			if n.State == atollpb.NodeState_NODE_ALIVE && loads[ids.MustFromBytes(n.NodeId)] == nil {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		select {
		case <-got:
			continue
		case <-deadline.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		break
	}
	st := &ClusterStatus{Address: strings.TrimPrefix(url, "nats://")}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range nodes {
		id := ids.MustFromBytes(n.NodeId)
		cn := ClusterNode{NodeID: id.String(), Hostname: n.Hostname, IsHead: n.IsHead, Driver: n.IsDriver,
			Alive: n.State == atollpb.NodeState_NODE_ALIVE, Total: n.Resources, StoreCap: n.ObjectStoreBytes}
		if l := loads[id]; l != nil && cn.Alive {
			cn.Reporting = true
			cn.Total, cn.Available = l.Total, l.Available
			cn.Queued, cn.Running = int(l.Queued), int(l.Running)
			cn.StoreUsed, cn.StoreCap, cn.Pulls, cn.PulledBytes = l.StoreUsed, l.StoreCapacity, l.Pulls, l.PulledBytes
			if s := l.Store; s != nil {
				cn.Objects, cn.PinnedBytes, cn.SpilledBytes, cn.SpillFiles = s.NumObjects, s.PinnedBytes, s.SpilledBytesCurrent, s.SpillFilesCurrent
				cn.SpilledTotal, cn.RestoredTotal = s.SpilledBytesTotal, s.RestoredBytesTotal
			}
		}
		st.Nodes = append(st.Nodes, cn)
	}
	sort.SliceStable(st.Nodes, func(i, j int) bool {
		a, b := st.Nodes[i], st.Nodes[j]
		if a.IsHead != b.IsHead {
			return a.IsHead
		}
		if a.Alive != b.Alive {
			return a.Alive
		}
		return a.NodeID < b.NodeID
	})
	return st, nil
}
