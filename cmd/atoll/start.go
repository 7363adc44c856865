package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

const (
	// startReadyTimeout bounds how long `atoll start` (without --block)
	// waits for the node it started in the background to be ready.
	startReadyTimeout = 60 * time.Second
	// nodeStopTimeout bounds a --block node's graceful stop.
	nodeStopTimeout = 30 * time.Second
	// pollInterval is how often start and stop look at files and pids.
	pollInterval = 50 * time.Millisecond
)

const startLong = `Starts an atoll cluster node on this machine.

With --head the node starts a new cluster: it runs the control plane (an
embedded NATS server with JetStream, or the one given with --nats, and the
GCS) and records its address in %s, which 'atoll start',
'atoll status' and drivers read when they are given no address. Without
--head the node joins the cluster at --address (default $ATOLL_ADDRESS, then
the recorded address).

A head with the embedded NATS server keeps the GCS's tables (nodes, actors,
jobs) in --gcs-dir (default %s, 0700), which outlives it:
a head started again on the same directory remembers the cluster, and the
nodes still running rejoin it. Only one head at a time may use a directory.
$TMPDIR may be emptied at boot: give --gcs-dir on persistent storage for
the state to survive a reboot of the machine.

The node runs in the background (its output goes to a log file under
$TMPDIR/atoll-<uid>/logs, 0600) unless --block keeps it in the foreground until SIGINT
or SIGTERM. 'atoll stop' stops every node started on this machine.

A port of 0 picks a free port.`

const startExample = `  atoll start --head
  atoll start --address 10.0.0.1:6380 --num-cpus 8 --resources GPU=2
  atoll start --head --port 0 --gossip-port 0 --transfer-port 0 --block`

// startFlags holds the flags of `atoll start`.
type startFlags struct {
	head              bool
	address           string
	nats              string
	gcsDir            string
	port              int
	gossipPort        int
	transferPort      int
	metricsPort       int
	nodeIP            string
	numCPUs           float64
	resources         string
	objectStoreMemory string
	workerBinary      string
	failureTimeout    time.Duration
	amm               bool
	ammInterval       time.Duration
	ammPolicies       string
	faultInjection    bool
	dashboard         bool
	dashboardPort     int
	dashboardTraceURL string
	logFile           string
	block             bool
	creds             credentialFlags
}

func newStartCmd() *cobra.Command {
	cmd, _ := startCommand()
	return cmd
}

// startCommand returns the start command and the flags it fills in.
func startCommand() (*cobra.Command, *startFlags) {
	f := &startFlags{}
	cmd := &cobra.Command{
		Use:     "start (--head | --address HOST:PORT) [flags]",
		Short:   "Start a cluster node on this machine (a head with --head)",
		Long:    fmt.Sprintf(startLong, nodeconfig.AddressFile(), nodeconfig.DefaultGCSDir()),
		Example: startExample,
		Args:    args(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.nodeConfig(cmd.Flags())
			if err != nil {
				return err
			}
			if f.block {
				return runNode(cmd.Context(), cmd.OutOrStdout(), cfg, &f.creds)
			}
			return startDetached(cmd.Context(), cmd.OutOrStdout(), childArgs(cmd), &f.creds)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.BoolVar(&f.head, "head", false, "start a new cluster: run the control plane (NATS, GCS) on this node")
	fl.StringVar(&f.address, "address", "", "`HOST:PORT` of the head to join (default $"+nodeconfig.EnvAddress+", then the address the local head recorded; \"auto\" reads it)")
	fl.StringVar(&f.nats, "nats", "", "head only: use the existing NATS server (with JetStream) at `URL` instead of the embedded one")
	fl.StringVar(&f.gcsDir, "gcs-dir", "", "head only: `DIR` of the GCS's state (the embedded NATS server's store), kept across restarts (default "+nodeconfig.DefaultGCSDir()+")")
	fl.IntVar(&f.port, "port", nodeconfig.DefaultPort, "head only: the embedded NATS server's client port, the cluster address (0: pick a free port)")
	fl.IntVar(&f.gossipPort, "gossip-port", nodeconfig.DefaultGossipPort, "memberlist port, UDP and TCP (0: pick a free port)")
	fl.IntVar(&f.transferPort, "transfer-port", nodeconfig.DefaultTransferPort, "port the node serves its objects to other nodes on (0: pick a free port)")
	fl.IntVar(&f.metricsPort, "metrics-port", nodeconfig.DefaultMetricsPort, "port the node serves Prometheus metrics on, GET /metrics (0: none); a default port already taken is a warning, a given one an error")
	fl.StringVar(&f.nodeIP, "node-ip", "127.0.0.1", "`IP` other nodes reach this node at")
	fl.Float64Var(&f.numCPUs, "num-cpus", float64(runtime.NumCPU()), "CPU slots of the node (0: it runs no tasks); the default is this machine's CPU count")
	fl.StringVar(&f.resources, "resources", "", "custom resources: `NAME=N`,... (e.g. GPU=1,disk=2) or a JSON object ({\"GPU\":1})")
	fl.StringVar(&f.objectStoreMemory, "object-store-memory", "", "object store `SIZE` in bytes or with a unit, e.g. 2GiB or 500MB (default: 30% of RAM)")
	fl.StringVar(&f.workerBinary, "worker-binary", "", "`PATH` of the program the node's worker processes run for every job (default: each job's driver binary)")
	fl.DurationVar(&f.failureTimeout, "failure-timeout", 5*time.Second, "time to declare a failed node dead")
	fl.BoolVar(&f.amm, "amm", false, "head only: run the Active Memory Manager's policies (as $ATOLL_AMM=1; 'atoll amm start|stop' later)")
	fl.DurationVar(&f.ammInterval, "amm-interval", 0, "head only: the AMM's interval (default 2s)")
	fl.StringVar(&f.ammPolicies, "amm-policies", "", "head only: the AMM's `POLICIES` in order, e.g. Replicate,ReduceReplicas,Rebalance:0.05 (default Replicate,ReduceReplicas)")
	fl.BoolVar(&f.faultInjection, "fault-injection", false, "head only: let the cluster's nodes and drivers inject faults into other nodes (KillNode, PartitionNode, fault plans' kill-node and partition); off, the head's NATS refuses them")
	fl.BoolVar(&f.dashboard, "include-dashboard", true, "head only: serve the web dashboard on --node-ip:--dashboard-port (--include-dashboard=false: none)")
	fl.IntVar(&f.dashboardPort, "dashboard-port", nodeconfig.DefaultDashboardPort, "head only: the dashboard's HTTP port (0: pick a free port)")
	fl.StringVar(&f.dashboardTraceURL, "dashboard-trace-url", "", "head only: link the dashboard's tasks to their traces at `URL`, with {trace_id} in it (e.g. http://localhost:16686/trace/{trace_id})")
	fl.StringVar(&f.logFile, "log-file", "", "the `FILE` this node's output goes to, served to the dashboard (set by 'atoll start' for background nodes)")
	_ = fl.MarkHidden("log-file")
	f.creds.register(fl)
	fl.BoolVar(&f.block, "block", false, "run the node in the foreground until SIGINT or SIGTERM")
	return cmd, f
}

// nodeConfig validates the flags and turns them into the node's config.
// Errors are atoll.ErrInvalidArgument (bad or conflicting flags) or
// atoll.ErrNotFound (no address given and none recorded).
func (f *startFlags) nodeConfig(fs *pflag.FlagSet) (nodeconfig.Config, error) {
	cfg := nodeconfig.Config{
		Head:           f.head,
		Port:           f.port,
		GossipPort:     f.gossipPort,
		TransferPort:   f.transferPort,
		NumCPUs:        f.numCPUs,
		FailureTimeout: f.failureTimeout,
	}
	if f.metricsPort < 0 || f.metricsPort > math.MaxUint16 {
		return cfg, errs.Invalidf("--metrics-port %d: want a port from 1 to 65535 (0: serve no metrics)", f.metricsPort)
	}
	cfg.MetricsPort, cfg.MetricsBestEffort = f.metricsPort, !fs.Changed("metrics-port")
	if f.head {
		if fs.Changed("address") {
			return cfg, errs.Invalidf("--head and --address conflict: a head starts a new cluster, --address joins an existing one")
		}
		if f.nats != "" {
			u, err := natsURL("--nats", f.nats)
			if err != nil {
				return cfg, err
			}
			if fs.Changed("port") {
				return cfg, errs.Invalidf("--port and --nats conflict: with --nats the head runs no NATS server of its own")
			}
			cfg.NATSURL = u
		}
		if fs.Changed("gcs-dir") {
			if f.nats != "" {
				return cfg, errs.Invalidf("--gcs-dir and --nats conflict: with --nats the GCS keeps its state on that NATS server")
			}
			if f.gcsDir == "" {
				return cfg, errs.Invalidf("--gcs-dir: want a directory")
			}
			dir, err := filepath.Abs(f.gcsDir) // the detached node may run elsewhere
			if err != nil {
				return cfg, errs.Invalidf("--gcs-dir %q: %v", f.gcsDir, err)
			}
			cfg.GCSDir = dir
		}
	} else {
		if fs.Changed("gcs-dir") {
			return cfg, errs.Invalidf("--gcs-dir needs --head: it holds the head's GCS state")
		}
		if f.nats != "" {
			return cfg, errs.Invalidf("--nats needs --head: only the head connects the cluster to a NATS server; other nodes join --address")
		}
		if fs.Changed("port") {
			return cfg, errs.Invalidf("--port needs --head: it is the head's NATS port; other nodes join --address and use --gossip-port and --transfer-port")
		}
		addr, err := joinAddress(fs.Changed("address"), f.address)
		if err != nil {
			return cfg, err
		}
		cfg.Address = addr
	}

	// Ports: 0 picks a free port. RandomPorts makes every zero port
	// random; the others are passed explicitly (defaults included), so
	// only the ports given as 0 are random.
	ports := []struct {
		name string
		val  int
		used bool
	}{
		{"--port", f.port, f.head && f.nats == ""},
		{"--gossip-port", f.gossipPort, true},
		{"--transfer-port", f.transferPort, true},
		{"--dashboard-port", f.dashboardPort, f.head && f.dashboard},
	}
	for _, p := range ports {
		if p.val < 0 || p.val > math.MaxUint16 {
			return cfg, errs.Invalidf("%s %d: want a port from 0 to 65535 (0 picks a free port)", p.name, p.val)
		}
		if p.used && p.val == 0 {
			cfg.RandomPorts = true
		}
	}

	ip := net.ParseIP(f.nodeIP)
	if ip == nil {
		return cfg, errs.Invalidf("--node-ip %q: want an IP address, e.g. 10.0.0.2", f.nodeIP)
	}
	cfg.NodeIP = ip.String()

	if math.IsNaN(f.numCPUs) || math.IsInf(f.numCPUs, 0) || f.numCPUs < 0 {
		return cfg, errs.Invalidf("--num-cpus %v: want a number >= 0", f.numCPUs)
	}
	if f.numCPUs == 0 {
		cfg.NumCPUs = nodeconfig.NoCPUs // a node that runs no tasks (a head serving only the control plane)
	}
	res, err := parseResources(f.resources)
	if err != nil {
		return cfg, err
	}
	cfg.Resources = res
	if f.objectStoreMemory != "" {
		n, err := parseStoreSize(f.objectStoreMemory)
		if err != nil {
			return cfg, err
		}
		cfg.ObjectStoreMemory = n
	}
	if f.workerBinary != "" {
		path, err := workerBinary(f.workerBinary)
		if err != nil {
			return cfg, err
		}
		cfg.WorkerBinary = path
	}
	if f.failureTimeout <= 0 {
		return cfg, errs.Invalidf("--failure-timeout %v: want a positive duration, e.g. 5s", f.failureTimeout)
	}
	if !f.head && (fs.Changed("amm") || fs.Changed("amm-interval") || fs.Changed("amm-policies")) {
		return cfg, errs.Invalidf("--amm, --amm-interval and --amm-policies are for the head (--head): it runs the Active Memory Manager")
	}
	if !f.head && fs.Changed("fault-injection") {
		return cfg, errs.Invalidf("--fault-injection is for the head (--head): its NATS server decides who may inject faults")
	}
	cfg.FaultInjection = f.faultInjection
	if err := f.dashboardConfig(fs, &cfg); err != nil {
		return cfg, err
	}
	if f.ammInterval < 0 {
		return cfg, errs.Invalidf("--amm-interval %v: want a positive duration, e.g. 2s", f.ammInterval)
	}
	cfg.AMM, cfg.AMMInterval = f.amm, f.ammInterval
	if f.ammPolicies != "" {
		policies, err := cluster.ParseAMMPolicies(f.ammPolicies)
		if err != nil {
			return cfg, err
		}
		cfg.AMMPolicies = policies
	}
	return cfg, f.creds.apply(&cfg)
}

// joinAddress is the cluster address a non-head node joins: --address,
// else $ATOLL_ADDRESS, else the address the local head recorded.
func joinAddress(given bool, address string) (string, error) {
	name := "--address"
	if !given {
		address, name = os.Getenv(nodeconfig.EnvAddress), "$"+nodeconfig.EnvAddress
	}
	if given && strings.TrimSpace(address) == "" {
		return "", errs.Invalidf("--address is empty: want HOST:PORT of the head (or \"auto\")")
	}
	if address == "" || address == "auto" {
		u, err := clusterclient.ResolveAddress("auto")
		if err != nil {
			return "", fmt.Errorf("give --head to start a new cluster or --address HOST:PORT to join one: %w", err)
		}
		return natsURL(nodeconfig.AddressFile(), u)
	}
	return natsURL(name, address)
}

// natsURL checks a HOST:PORT or nats:// URL (or a comma-separated list of
// them) and returns it with the nats:// scheme on every URL.
func natsURL(name, s string) (string, error) {
	bad := func() error {
		return errs.Invalidf("%s %q: want HOST:PORT or a nats:// URL, e.g. 127.0.0.1:%d", name, s, nodeconfig.DefaultPort)
	}
	var urls []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if !strings.Contains(part, "://") {
			part = "nats://" + part
		}
		u, err := url.Parse(part)
		if err != nil || u.Host == "" {
			return "", bad()
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || host == "" {
			return "", bad()
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > math.MaxUint16 {
			return "", errs.Invalidf("%s %q: port %q: want 1 to 65535", name, s, port)
		}
		urls = append(urls, part)
	}
	return strings.Join(urls, ","), nil
}

// parseResources reads --resources: "NAME=N,NAME=N" or a JSON object
// {"NAME": N}. CPUs are given with --num-cpus, not here.
func parseResources(s string) (map[string]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	res := map[string]float64{}
	if strings.HasPrefix(s, "{") {
		dec := json.NewDecoder(strings.NewReader(s))
		if err := dec.Decode(&res); err != nil {
			return nil, errs.Invalidf("--resources %s: not a JSON object of numbers (%v), e.g. {\"GPU\":1}", s, err)
		}
		if dec.More() {
			return nil, errs.Invalidf("--resources %s: text after the JSON object", s)
		}
	} else {
		for item := range strings.SplitSeq(s, ",") {
			name, val, ok := strings.Cut(item, "=")
			name, val = strings.TrimSpace(name), strings.TrimSpace(val)
			if !ok || name == "" || val == "" {
				return nil, errs.Invalidf("--resources %q: entry %q: want NAME=N, e.g. GPU=1,disk=2", s, strings.TrimSpace(item))
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return nil, errs.Invalidf("--resources %q: %s=%s: not a number", s, name, val)
			}
			if _, dup := res[name]; dup {
				return nil, errs.Invalidf("--resources %q: %s given twice", s, name)
			}
			res[name] = v
		}
	}
	names := make([]string, 0, len(res))
	for name := range res {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := res[name]
		switch {
		case name == "" || strings.ContainsAny(name, "=,{}\" \t\n"):
			return nil, errs.Invalidf("--resources %s: bad resource name %q", s, name)
		case strings.EqualFold(name, "CPU"):
			return nil, errs.Invalidf("--resources %s: give CPUs with --num-cpus", s)
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return nil, errs.Invalidf("--resources %s: %s=%v: want a non-negative number", s, name, v)
		}
	}
	return res, nil
}

// parseStoreSize reads --object-store-memory: bytes, or a size with a
// unit such as 2GiB or 500MB.
func parseStoreSize(s string) (uint64, error) {
	n, err := benchfmt.ParseSize(s)
	if err != nil {
		return 0, errs.Invalidf("--object-store-memory: %v", err)
	}
	if n <= 0 {
		return 0, errs.Invalidf("--object-store-memory %q: want a positive size, e.g. 2GiB (omit the flag for 30%% of RAM)", s)
	}
	return uint64(n), nil
}

// workerBinary checks --worker-binary and makes it absolute.
func workerBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", errs.Invalidf("--worker-binary %q: %v", path, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", errs.Invalidf("--worker-binary %q: %v", path, err)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", errs.Invalidf("--worker-binary %q: not an executable file", path)
	}
	return abs, nil
}

// stateDir is nodeconfig.StateDir ($TMPDIR/atoll-<uid>), where `atoll start`
// keeps node records and logs.
func stateDir() string { return nodeconfig.StateDir() }

// nodesDir holds one record file per running node, named <pid>.json.
func nodesDir() string { return filepath.Join(stateDir(), "nodes") }

// logsDir holds the output of nodes started in the background.
func logsDir() string { return filepath.Join(stateDir(), "logs") }

// recordFile is the record file of the node process pid.
func recordFile(pid int) string {
	return filepath.Join(nodesDir(), strconv.Itoa(pid)+".json")
}

// nodeRecord is a record file's content: node.NodeReady and whether the
// node is a head (`atoll stop` stops heads last).
type nodeRecord struct {
	node.NodeReady
	Head bool `json:"head,omitempty"`
}

// runNode runs a node in this process (--block) until ctx is cancelled or
// the process receives SIGTERM, then stops it.
func runNode(ctx context.Context, w io.Writer, cfg nodeconfig.Config, creds *credentialFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start node: %w", err)
	}
	rec := nodeRecord{NodeReady: node.NodeReady{NodeID: n.ID().String(), Address: n.Address(), PID: os.Getpid(), DashboardURL: n.DashboardURL(), MetricsAddress: n.MetricsAddress()},
		Head: cfg.Head}
	cleanup, err := publishNode(rec)
	if err == nil {
		printStarted(w, rec, "", cfg.Address, creds)
		fmt.Fprintln(w, "running in the foreground: SIGINT (Ctrl-C) or SIGTERM stops the node")
		select {
		case <-ctx.Done():
		case <-n.DeclaredDead():
			err = node.ErrDeclaredDead
		case <-n.Drained():
			fmt.Fprintln(w, "drained: leaving the cluster")
		}
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodeStopTimeout)
	defer cancel()
	stopErr := n.Stop(stopCtx)
	cleanup()
	if err != nil {
		return err
	}
	if stopErr != nil {
		return fmt.Errorf("stop node: %w", stopErr)
	}
	fmt.Fprintf(w, "atoll node %s stopped\n", rec.NodeID)
	return nil
}

// publishNode writes the node's record file and, for a head, the address
// file; cleanup removes them (the address file only if it still holds
// this head's address). On error it has already cleaned up.
func publishNode(rec nodeRecord) (cleanup func(), err error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return func() {}, err
	}
	path := recordFile(rec.PID)
	var addrData []byte
	cleanup = func() {
		_ = os.Remove(path)
		if addrData != nil {
			if cur, err := os.ReadFile(nodeconfig.AddressFile()); err == nil && bytes.Equal(cur, addrData) {
				_ = os.Remove(nodeconfig.AddressFile())
			}
		}
	}
	if rec.Head {
		addrData = []byte(displayAddress(rec.Address) + "\n")
		if err := writeFileAtomic(nodeconfig.AddressFile(), addrData); err != nil {
			addrData = nil
			return func() {}, fmt.Errorf("record the cluster address: %w", err)
		}
	}
	if err := writeFileAtomic(path, append(data, '\n')); err != nil {
		cleanup()
		return func() {}, fmt.Errorf("record the node: %w", err)
	}
	return cleanup, nil
}

// writeFileAtomic writes a file through a temporary file and a rename, so
// readers see either no file or all of it.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := makePrivateDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// makePrivateDir makes dir (and the state directory above it) 0700, or
// checks that the existing ones are this user's and closed to others.
func makePrivateDir(dir string) error {
	if err := nodeconfig.MakeStateDir(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return nodeconfig.CheckOwned(dir)
}

// displayAddress shows a single nats:// URL as HOST:PORT.
func displayAddress(a string) string {
	if strings.Contains(a, ",") {
		return a
	}
	return strings.TrimPrefix(a, "nats://")
}

// printStarted tells the user about a started node and, for a head, how
// to use the cluster.
func printStarted(w io.Writer, rec nodeRecord, logFile, joined string, creds *credentialFlags) {
	where := fmt.Sprintf("pid %d", rec.PID)
	if logFile != "" {
		where += ", log " + logFile
	}
	fmt.Fprintf(w, "atoll node %s started (%s)\n", rec.NodeID, where)
	if rec.MetricsAddress != "" {
		fmt.Fprintf(w, "metrics: http://%s/metrics\n", rec.MetricsAddress)
	}
	addr := displayAddress(rec.Address)
	if !rec.Head {
		if addr == "" {
			addr = displayAddress(joined)
		}
		fmt.Fprintf(w, "joined the cluster at %s\n", addr)
		return
	}
	fmt.Fprintf(w, "cluster address: %s\n", addr)
	if rec.DashboardURL != "" {
		fmt.Fprintf(w, "dashboard: %s\n", rec.DashboardURL)
	}
	creds.printSecret(w, addr)
	fmt.Fprintf(w, "connect a driver: %s=%s go run ./samples/quickstart\n", nodeconfig.EnvAddress, addr)
	fmt.Fprintln(w, "stop every node: atoll stop")
}

// childArgs are the arguments a background node process runs with: this
// command and the flags it was given, plus --block.
func childArgs(cmd *cobra.Command) []string {
	args := []string{cmd.Name()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name != "block" && fl.Name != "log-file" {
			args = append(args, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	return append(args, "--block")
}

// startDetached runs this program again with args in a new session,
// its output going to a log file, and waits until the node it starts has
// written its record file.
func startDetached(ctx context.Context, w io.Writer, args []string, creds *credentialFlags) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the atoll executable: %w", err)
	}
	if err := makePrivateDir(logsDir()); err != nil {
		return err
	}
	if err := makePrivateDir(nodesDir()); err != nil {
		return err
	}
	logPath := filepath.Join(logsDir(), fmt.Sprintf("node-%d.log", time.Now().UnixNano()))
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devNull.Close()
	child := exec.Command(exe, append(args, "--log-file="+logPath)...)
	child.Stdin, child.Stdout, child.Stderr = devNull, logFile, logFile
	// A new session: the node outlives this command and its terminal.
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return fmt.Errorf("start %s: %w", exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	pid := child.Process.Pid
	rec, err := waitRecord(ctx, pid, exited, startReadyTimeout)
	if err != nil {
		_ = child.Process.Kill()
		return fmt.Errorf("%w\n%s (last lines):\n%s", err, logPath, localcluster.Tail(logPath, 20))
	}
	printStarted(w, rec, logPath, "", creds)
	return nil
}

// waitRecord waits until the node process pid has written its record
// file, it exits, ctx ends, or timeout passes.
func waitRecord(ctx context.Context, pid int, exited <-chan error, timeout time.Duration) (nodeRecord, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	path := recordFile(pid)
	for {
		if data, err := os.ReadFile(path); err == nil {
			var rec nodeRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				return rec, fmt.Errorf("node record %s: %w", path, err)
			}
			return rec, nil
		}
		select {
		case err := <-exited:
			if err == nil {
				err = errors.New("exit status 0")
			}
			return nodeRecord{}, fmt.Errorf("the node process (pid %d) exited before it was ready: %v", pid, err)
		case <-deadline.C:
			return nodeRecord{}, errs.Unavailablef("the node process (pid %d) was not ready after %v", pid, timeout)
		case <-ctx.Done():
			return nodeRecord{}, ctx.Err()
		case <-tick.C:
		}
	}
}
