// Package testcluster starts multi-node atoll clusters on 127.0.0.1 for
// tests and benchmarks: every node is a separate process running the test
// binary itself, so the nodes' worker processes run the test's registered
// functions and actor types.
//
// A node process is the test binary (os.Executable()) started with
// nodeconfig.EnvNode set to its JSON-encoded nodeconfig.Config. The package's
// TestMain must hand such a process to atoll.Init before running tests:
//
//	func TestMain(m *testing.M) {
//		if atoll.IsWorker() {
//			_ = atoll.Init(context.Background())
//		}
//		os.Exit(m.Run())
//	}
//
// atoll.Init then runs the node: it prints node.NodeReadyPrefix and a
// JSON node.NodeReady line once it serves, and exits on SIGTERM. Start
// waits for that line. Each node's output goes to a log file in the test's
// temporary directory; the last lines of every log are printed when the
// test fails.
//
//	c := testcluster.Start(t, testcluster.Options{Nodes: 3,
//		Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 4 * time.Second}})
//	// a driver joins the cluster:
//	atoll.Init(ctx, atoll.WithAddress(c.Address()))
//	c.Kill(2)    // SIGKILL a node
//	c.Restart(2) // and start it again
//
// Options.Env tunes the node processes through the environment (the caps
// of the GCS and the gateways, the forwarding lease); NodeStats reads a
// node's table sizes and heap, GCSSizes the GCS's tables.
//
// The methods of Cluster report failures with t.Fatal, so call them from
// the test's goroutine. Cleanups run last-registered first: a driver's
// atoll.Shutdown registered after Start runs before the nodes stop.
package testcluster

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Defaults of Options.Node that differ from a node's own: small nodes,
// quick to declare dead.
const (
	DefaultNodes             = 3
	DefaultNumCPUs           = 1
	DefaultObjectStoreMemory = 256 << 20
	DefaultFailureTimeout    = 2 * time.Second
	// ReadyTimeout bounds the wait for a node's ready line.
	ReadyTimeout = 60 * time.Second
	// StopTimeout is how long a node gets to exit after SIGTERM before it
	// is killed.
	StopTimeout = 10 * time.Second
	// LogTailLines is how many lines of each node's log a failed test
	// prints.
	LogTailLines = 50
)

// Options configures a cluster. Zero fields take the defaults.
type Options struct {
	// Nodes is the number of nodes (default 3); node 0 is the head.
	Nodes int
	// Node is every node's settings. Zero NumCPUs, ObjectStoreMemory and
	// FailureTimeout take the defaults above (1 CPU, 256 MiB, 2 s; memberlist
	// cannot go below about 1.2 s), other zero fields the node's own. The
	// cluster decides each node's Head, Address, NodeIP, ports,
	// SessionDir, GCSDir and LogFile; NATSURL (an existing NATS server
	// with JetStream instead of the head's embedded one) and Dashboard (on
	// a free port: Cluster.DashboardURL) are the head's only.
	Node nodeconfig.Config
	// Config, if set, adjusts node i's settings after Node and the
	// defaults (what the cluster decides is set afterwards).
	Config func(i int, cfg *nodeconfig.Config)
	// NoFaultInjection starts the head without Config.FaultInjection
	// (test clusters allow it by default: tests kill and cut nodes).
	NoFaultInjection bool
	// Env is added to every node process's environment ("KEY=value"),
	// e.g. the caps of the GCS (gcs.EnvMaxDeadActors, ...) and of the
	// gateways (cluster.EnvMaxDeadNodes, cluster.EnvForwardLease, ...).
	// TMPDIR is the cluster's own directory unless Env sets it: what a
	// node keeps under the state directory (job binaries, among others)
	// goes with the test, not into the machine's.
	Env []string
}

// withDefaults fills in the zero fields.
func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = DefaultNodes
	}
	if o.Node.NumCPUs == 0 {
		o.Node.NumCPUs = DefaultNumCPUs
	}
	if o.Node.ObjectStoreMemory == 0 {
		o.Node.ObjectStoreMemory = DefaultObjectStoreMemory
	}
	if o.Node.FailureTimeout == 0 {
		o.Node.FailureTimeout = DefaultFailureTimeout
	}
	return o
}

// Cluster is a running test cluster. Its processes are stopped when the
// test ends.
type Cluster struct {
	t    testing.TB
	opts Options
	dir  string // the test's temporary directory for logs and session dirs
	exe  string // the test binary
	// secret is the cluster secret every node gets (unless a test gives
	// one another).
	secret clusterkey.Secret

	mu      sync.Mutex
	nodes   []*Node
	logs    []string   // every node log, restarted incarnations included
	address string     // the head's cluster address
	seq     int        // incarnation counter, for unique file names
	nc      *nats.Conn // for NodeStats and GCSSizes, made on first use
}

// Node is one node process. A restarted node is a new Node.
type Node struct {
	// Index is the node's position in the cluster (0: the head).
	Index int
	// ID is the node id (hex) the node reported.
	ID string
	// PID is the node's process id.
	PID int
	// Address is the cluster address the node reported.
	Address string
	// MetricsAddress is where the node serves Prometheus metrics
	// (host:port), if its Config.MetricsPort asked for it.
	MetricsAddress string
	// Config is the config the node was started with.
	Config nodeconfig.Config
	// LogFile holds the node's stdout and stderr (nodeconfig.Config.LogFile).
	LogFile string
	// DashboardURL is the dashboard the node serves (a head started with
	// Options.Node.Dashboard), else "".
	DashboardURL string

	proc *localcluster.Process
}

// Alive reports whether the node's process has not exited yet.
func (n *Node) Alive() bool {
	select {
	case <-n.proc.Done():
		return false
	default:
		return true
	}
}

// Done is closed once the node's process has exited and been reaped.
func (n *Node) Done() <-chan struct{} { return n.proc.Done() }

// ExitErr is how the node's process exited (an *exec.ExitError, or an
// error saying "exit status 0"), once Done is closed; nil before.
func (n *Node) ExitErr() error { return n.proc.Err() }

// ExitCode is the node process's exit status once Done is closed (-1
// before, or when a signal killed it).
func (n *Node) ExitCode() int { return n.proc.ExitCode() }

// Signal sends sig to the node's process (SIGSTOP and SIGCONT pause and
// resume it) unless it has exited.
func (n *Node) Signal(sig syscall.Signal) error { return n.proc.Signal(sig) }

// Start starts a cluster of opts.Nodes node processes: the head first,
// then the others concurrently, each waited for until it is ready. The
// test's cleanup stops every node (SIGTERM, then SIGKILL after
// StopTimeout) and, if the test failed, logs the tail of each node's log.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if os.Getenv(nodeconfig.EnvNode) != "" {
		// A node process ran the tests instead of serving as a node: its
		// TestMain does not call atoll.Init. Starting more nodes here
		// would recurse.
		t.Fatalf("testcluster.Start in a node process (%s is set): TestMain must call atoll.Init when atoll.IsWorker()", nodeconfig.EnvNode)
	}
	opts = opts.withDefaults()
	if opts.Nodes < 1 {
		t.Fatalf("testcluster: Options.Nodes %d: want at least 1", opts.Nodes)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	secret, err := clusterkey.Generate()
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	c := &Cluster{t: t, opts: opts, dir: t.TempDir(), exe: exe, secret: secret}
	if err := os.Mkdir(c.tmpDir(), 0o700); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	// Registered after t.TempDir, so it runs before the directory is
	// removed.
	t.Cleanup(c.cleanup)

	head, err := c.launch(0, c.config(0))
	if err != nil {
		t.Fatalf("testcluster: head: %v", err)
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, head)
	c.address = head.Address
	c.mu.Unlock()

	rest := make([]*Node, opts.Nodes-1)
	errList := make([]error, opts.Nodes-1)
	var wg sync.WaitGroup
	for i := 1; i < opts.Nodes; i++ {
		cfg := c.config(i)
		wg.Go(func() { rest[i-1], errList[i-1] = c.launch(i, cfg) })
	}
	wg.Wait()
	c.mu.Lock()
	c.nodes = append(c.nodes, rest...) // nil for a node that failed
	c.mu.Unlock()
	for i, err := range errList {
		if err != nil {
			t.Fatalf("testcluster: node %d: %v", i+1, err)
		}
	}
	return c
}

// Address is the head's cluster address (host:port), for
// atoll.WithAddress, clusterclient.GetStatus or nodeconfig.Config.Address.
func (c *Cluster) Address() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.address
}

// DashboardURL is the head's dashboard (http://127.0.0.1:port); the test
// fails unless the cluster was started with Options.Node.Dashboard.
func (c *Cluster) DashboardURL() string {
	c.t.Helper()
	u := c.Node(0).DashboardURL
	if u == "" {
		c.t.Fatalf("testcluster: the head serves no dashboard (start the cluster with Options.Node.Dashboard)")
	}
	return u
}

// Secret is the cluster secret (hex) every node was given, for
// atoll.WithSecret.
func (c *Cluster) Secret() string { return c.secret.Hex() }

// Credentials are the cluster's credentials, for clusterclient.Dial,
// clusterclient.GetStatus and the like.
func (c *Cluster) Credentials() nodeconfig.Credentials {
	return nodeconfig.Credentials{Secret: c.Secret()}
}

// DialAs connects to the head's NATS as user (cluster.HeadUser,
// cluster.NodeUser(id), cluster.ClientUser, cluster.ReaderUser) with the
// password the cluster's secret derives for it, replies under the user's
// own inbox prefix; closed at the test's cleanup. A test that listens on
// every subject or poses as a node needs the role that may.
func (c *Cluster) DialAs(user string, opts ...nats.Option) *nats.Conn {
	c.t.Helper()
	nc, err := nats.Connect("nats://"+c.Address(), append([]nats.Option{nats.Name("testcluster-" + user),
		nats.UserInfo(user, c.secret.NATSPassword(user)), nats.CustomInboxPrefix(cluster.InboxPrefix(user)),
		nats.NoReconnect(), nats.Timeout(10 * time.Second)}, opts...)...)
	if err != nil {
		c.t.Fatalf("testcluster: connect as %s: %v", user, err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// Options are the cluster's options, defaults filled in.
func (c *Cluster) Options() Options { return c.opts }

// Len is the number of nodes, stopped ones included.
func (c *Cluster) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodes)
}

// Node returns node i (0: the head), its latest incarnation.
func (c *Cluster) Node(i int) *Node {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) || c.nodes[i] == nil {
		c.t.Fatalf("testcluster: no node %d (the cluster has %d)", i, len(c.nodes))
	}
	return c.nodes[i]
}

// Kill kills node i with SIGKILL, as a crash would, and waits until its
// process has been reaped.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	n := c.Node(i)
	_ = n.proc.Signal(syscall.SIGKILL)
	if !n.proc.Wait(StopTimeout) {
		c.t.Fatalf("testcluster: node %d (pid %d) still running %v after SIGKILL", i, n.PID, StopTimeout)
	}
}

// Stop stops node i gracefully (SIGTERM) and waits until it has exited;
// after StopTimeout it is killed.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	n := c.Node(i)
	if err := n.proc.Stop(StopTimeout); err != nil {
		c.t.Fatalf("testcluster: stop node %d: %v", i, err)
	}
}

// Restart starts node i again, after stopping it if it still runs, with
// the same config, and waits until it is ready; Node(i) is then the new
// process. A restarted head keeps its session directory and, unless it
// uses Options.NATSURL, its NATS port and its GCS directory (the
// cluster's own, in the test's temporary directory), so the cluster
// address does not change and its state is reloaded.
func (c *Cluster) Restart(i int) *Node {
	c.t.Helper()
	old := c.Node(i)
	if old.Alive() {
		c.Stop(i)
	}
	cfg := old.Config
	if cfg.Head {
		if cfg.NATSURL == "" {
			if _, port, err := net.SplitHostPort(strings.TrimPrefix(old.Address, "nats://")); err == nil {
				if p, err := strconv.Atoi(port); err == nil {
					cfg.Port = p
				}
			}
		}
	} else {
		cfg.Address = c.Address()
		cfg.SessionDir = c.sessionDir(i)
	}
	n, err := c.launch(i, cfg)
	if err != nil {
		c.t.Fatalf("testcluster: restart node %d: %v", i, err)
	}
	c.mu.Lock()
	c.nodes[i] = n
	if cfg.Head {
		c.address = n.Address
	}
	c.mu.Unlock()
	return n
}

// AddNode starts one more node joining the cluster and waits until it is
// ready. cfg, if not nil, adjusts the node's config last (the defaults,
// Options.Resources and Options.Config applied), so it may change
// anything, ports included.
func (c *Cluster) AddNode(cfg func(*nodeconfig.Config)) *Node {
	c.t.Helper()
	c.mu.Lock()
	i := len(c.nodes)
	c.nodes = append(c.nodes, nil) // reserve the index
	c.mu.Unlock()
	nc := c.config(i)
	if cfg != nil {
		cfg(&nc)
	}
	n, err := c.launch(i, nc)
	c.mu.Lock()
	if err != nil {
		c.nodes = c.nodes[:i]
	} else {
		c.nodes[i] = n
	}
	c.mu.Unlock()
	if err != nil {
		c.t.Fatalf("testcluster: add node %d: %v", i, err)
	}
	return n
}

// WaitStatus polls clusterclient.GetStatus until cond holds, failing the
// test after timeout with the last status or error. It returns the status
// that satisfied cond.
func (c *Cluster) WaitStatus(timeout time.Duration, cond func(*clusterclient.Status) bool) *clusterclient.Status {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		st, err := clusterclient.GetStatus(ctx, c.Address(), c.Credentials())
		if err == nil && cond(st) {
			return st
		}
		if err != nil {
			last = "error: " + err.Error()
		} else {
			b, _ := json.MarshalIndent(st, "", "  ")
			last = string(b)
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("testcluster: cluster status not as expected after %v; last status %s", timeout, last)
		case <-tick.C:
		}
	}
}

// config is node i's config before it starts: Options.Node, adjusted by
// Options.Config, with what the cluster decides.
func (c *Cluster) config(i int) nodeconfig.Config {
	cfg := c.opts.Node
	cfg.Resources = maps.Clone(cfg.Resources) // a node's own, for Config to change
	cfg.SpillDirs = slices.Clone(cfg.SpillDirs)
	if c.opts.Config != nil {
		c.opts.Config(i, &cfg)
	}
	if cfg.Secret == "" && cfg.SecretFile == "" { // a test may give a node another
		cfg.Secret = c.Secret()
	}
	cfg.Head = i == 0
	if cfg.Head && !c.opts.NoFaultInjection {
		cfg.FaultInjection = true
	}
	cfg.GCSDir = ""
	if !cfg.Head {
		cfg.NATSURL, cfg.Dashboard, cfg.DashboardTraceURL = "", false, ""
	} else if cfg.NATSURL == "" {
		// The cluster's own: Restart keeps it (the config is reused).
		cfg.GCSDir = filepath.Join(c.dir, "gcs")
	}
	cfg.Address = ""
	if !cfg.Head {
		cfg.Address = c.Address()
	}
	cfg.NodeIP = "127.0.0.1"
	cfg.RandomPorts = true
	cfg.Port, cfg.GossipPort, cfg.TransferPort, cfg.DashboardPort = 0, 0, 0, 0
	cfg.SessionDir = c.sessionDir(i)
	cfg.Logger = nil
	return cfg
}

// sessionDir makes a fresh session directory for node i (short names:
// sockets may live there).
func (c *Cluster) sessionDir(i int) string {
	c.mu.Lock()
	c.seq++
	dir := filepath.Join(c.dir, fmt.Sprintf("n%d.%d", i, c.seq))
	c.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	return dir
}

// tmpDir is the node processes' TMPDIR (made by Start).
func (c *Cluster) tmpDir() string { return filepath.Join(c.dir, "tmp") }

// launch starts node i's process with cfg and waits until it is ready.
func (c *Cluster) launch(i int, cfg nodeconfig.Config) (*Node, error) {
	c.mu.Lock()
	c.seq++
	logFile := filepath.Join(c.dir, fmt.Sprintf("node%d.%d.log", i, c.seq))
	c.logs = append(c.logs, logFile)
	c.mu.Unlock()
	cfg.LogFile = logFile
	nodeEnv, err := cfg.Environ()
	if err != nil {
		return nil, err
	}
	env := append(localcluster.FilterEnv(os.Environ(), nodeconfig.EnvNode), "TMPDIR="+c.tmpDir())
	env = append(append(env, c.opts.Env...), nodeEnv)
	// -test.run=^$: should TestMain not hand the process to atoll.Init,
	// it runs no tests (and exits) rather than starting clusters itself.
	p, ready, err := localcluster.StartProcess(c.exe, []string{"-test.run=^$"}, env, logFile, ReadyTimeout)
	if err != nil {
		return nil, err
	}
	return &Node{
		Index:          i,
		ID:             ready.NodeID,
		PID:            p.Pid(),
		Address:        ready.Address,
		Config:         cfg,
		LogFile:        logFile,
		DashboardURL:   ready.DashboardURL,
		MetricsAddress: ready.MetricsAddress,
		proc:           p,
	}, nil
}

// conn returns the cluster's NATS connection of the test process.
func (c *Cluster) conn() *nats.Conn {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		var err error
		if c.nc, _, err = clusterclient.Dial(c.address, "testcluster", nodeconfig.Credentials{Secret: c.secret.Hex()}, nats.MaxReconnects(-1)); err != nil {
			c.t.Fatalf("testcluster: connect to %s: %v", c.address, err)
		}
	}
	return c.nc
}

// NodeStats asks node i for the sizes of its bounded tables (gateway and
// raylet) and its Go heap, after a garbage collection in the node
// process if gc is set.
func (c *Cluster) NodeStats(i int, gc bool) *atollpb.NodeStats {
	c.t.Helper()
	return c.StatsOf(c.Node(i).ID, gc)
}

// StatsOf is NodeStats for the node with the given id (hex), which may be
// a node this Cluster did not start (a driver's).
func (c *Cluster) StatsOf(nodeID string, gc bool) *atollpb.NodeStats {
	c.t.Helper()
	b, err := hex.DecodeString(nodeID)
	if err != nil {
		c.t.Fatalf("testcluster: node id %q: %v", nodeID, err)
	}
	id, err := ids.FromBytes(b)
	if err != nil {
		c.t.Fatalf("testcluster: node id %q: %v", nodeID, err)
	}
	req, _ := proto.Marshal(&atollpb.NodeStatsRequest{Gc: gc})
	msg, err := c.conn().Request(cluster.NodeStatsSubject(id), req, 30*time.Second)
	if err != nil {
		c.t.Fatalf("testcluster: stats of node %s: %v", nodeID, err)
	}
	var st atollpb.NodeStats
	if err := proto.Unmarshal(msg.Data, &st); err != nil {
		c.t.Fatalf("testcluster: stats of node %s: %v", nodeID, err)
	}
	return &st
}

// GCSSizes counts the entries of the GCS's tables.
type GCSSizes struct {
	Nodes, DeadNodes   int
	Actors, DeadActors int
	Jobs, FinishedJobs int
}

// GCSSizes reads the GCS's tables (dead and finished entries included) and
// counts them.
func (c *Cluster) GCSSizes() GCSSizes {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := gcs.NewClient(c.conn(), gcs.ClientOptions{WaitForServer: true})
	nodes, err1 := client.ListNodes(ctx)
	actors, err2 := client.ListActors(ctx)
	jobs, err3 := client.ListJobs(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		c.t.Fatalf("testcluster: read the GCS tables: %v", err)
	}
	s := GCSSizes{Nodes: len(nodes), Actors: len(actors), Jobs: len(jobs)}
	for _, n := range nodes {
		if n.State == atollpb.NodeState_NODE_DEAD {
			s.DeadNodes++
		}
	}
	for _, a := range actors {
		if a.State == atollpb.ActorState_ACTOR_DEAD {
			s.DeadActors++
		}
	}
	for _, j := range jobs {
		if j.Finished {
			s.FinishedJobs++
		}
	}
	return s
}

// cleanup stops every node still running, others before the head, and
// logs the tail of every node's log if the test failed.
func (c *Cluster) cleanup() {
	c.mu.Lock()
	nodes := append([]*Node(nil), c.nodes...)
	logs := append([]string(nil), c.logs...)
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
	c.mu.Unlock()
	var others []*Node
	var head *Node
	for _, n := range nodes {
		switch {
		case n == nil:
		case n.Config.Head:
			head = n
		default:
			others = append(others, n)
		}
	}
	stopAll := func(ns []*Node) {
		var wg sync.WaitGroup
		for _, n := range ns {
			wg.Go(func() {
				if err := n.proc.Stop(StopTimeout); err != nil {
					c.t.Errorf("testcluster: node %d (pid %d): %v", n.Index, n.PID, err)
				}
			})
		}
		wg.Wait()
	}
	stopAll(others)
	if head != nil {
		stopAll([]*Node{head})
	}
	// Node processes (and their workers, whose output they inherit) run
	// the test binary, built with -race in CI: a race there fails the test
	// as one in the test process would.
	for _, path := range logs {
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte("WARNING: DATA RACE")) {
			c.t.Errorf("testcluster: the race detector reported a data race in %s", path)
		}
	}
	if c.t.Failed() {
		for _, path := range logs {
			c.t.Logf("testcluster: last lines of %s:\n%s", path, localcluster.Tail(path, LogTailLines))
		}
	}
}
