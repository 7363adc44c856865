package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// isolate gives the test its own $TMPDIR, so node records and the cluster
// address file are the test's, and clears $ATOLL_ADDRESS.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(nodeconfig.EnvAddress, "")
}

// parseStart parses `atoll start` flags into the node config.
func parseStart(args ...string) (nodeconfig.Config, error) {
	cmd, f := startCommand()
	if err := cmd.ParseFlags(args); err != nil {
		return nodeconfig.Config{}, err
	}
	return f.nodeConfig(cmd.Flags())
}

func TestStartConfig(t *testing.T) {
	isolate(t)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	ncpu := float64(runtime.NumCPU())
	head := nodeconfig.Config{
		Head: true, NodeIP: "127.0.0.1", Port: nodeconfig.DefaultPort, GossipPort: nodeconfig.DefaultGossipPort,
		TransferPort: nodeconfig.DefaultTransferPort, NumCPUs: ncpu, FailureTimeout: 5 * time.Second,
		Dashboard: true, DashboardPort: nodeconfig.DefaultDashboardPort,
		MetricsPort: nodeconfig.DefaultMetricsPort, MetricsBestEffort: true,
	}
	worker := head
	worker.Head, worker.Address = false, "nats://10.0.0.1:6380"
	worker.Dashboard, worker.DashboardPort = false, 0
	with := func(base nodeconfig.Config, f func(*nodeconfig.Config)) nodeconfig.Config {
		f(&base)
		return base
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want nodeconfig.Config
	}{
		{[]string{"--head"}, head},
		// Port 0 picks a free port; only the ports given as 0 are random.
		{[]string{"--head", "--port", "0"}, with(head, func(c *nodeconfig.Config) { c.Port, c.RandomPorts = 0, true })},
		{[]string{"--head", "--gossip-port=0", "--transfer-port=0"}, with(head, func(c *nodeconfig.Config) {
			c.GossipPort, c.TransferPort, c.RandomPorts = 0, 0, true
		})},
		{[]string{"--head", "--port", "7000", "--gossip-port", "7001"}, with(head, func(c *nodeconfig.Config) { c.Port, c.GossipPort = 7000, 7001 })},
		{[]string{"--address", "10.0.0.1:6380"}, worker},
		{[]string{"--address", "nats://10.0.0.1:6380", "--transfer-port", "0"}, with(worker, func(c *nodeconfig.Config) {
			c.TransferPort, c.RandomPorts = 0, true
		})},
		// --nats: the head's port is unused, so its default does not count.
		{[]string{"--head", "--nats", "127.0.0.1:4222", "--gossip-port", "0"}, with(head, func(c *nodeconfig.Config) {
			c.NATSURL, c.GossipPort, c.RandomPorts = "nats://127.0.0.1:4222", 0, true
		})},
		{[]string{"--head", "--nats", "nats://a:4222,b:4223"}, with(head, func(c *nodeconfig.Config) { c.NATSURL = "nats://a:4222,nats://b:4223" })},
		{[]string{"--head", "--gcs-dir", "/var/lib/atoll/gcs"}, with(head, func(c *nodeconfig.Config) { c.GCSDir = "/var/lib/atoll/gcs" })},
		{[]string{"--head", "--gcs-dir", "rel/gcs"}, with(head, func(c *nodeconfig.Config) { c.GCSDir = filepath.Join(cwd, "rel/gcs") })},
		{[]string{"--head", "--node-ip", "10.1.2.3", "--num-cpus", "2.5", "--failure-timeout", "2s"}, with(head, func(c *nodeconfig.Config) {
			c.NodeIP, c.NumCPUs, c.FailureTimeout = "10.1.2.3", 2.5, 2*time.Second
		})},
		{[]string{"--head", "--resources", "GPU=1, disk=2.5"}, with(head, func(c *nodeconfig.Config) { c.Resources = map[string]float64{"GPU": 1, "disk": 2.5} })},
		{[]string{"--head", "--resources", `{"GPU": 2}`}, with(head, func(c *nodeconfig.Config) { c.Resources = map[string]float64{"GPU": 2} })},
		{[]string{"--head", "--object-store-memory", "2GiB"}, with(head, func(c *nodeconfig.Config) { c.ObjectStoreMemory = 2 << 30 })},
		{[]string{"--head", "--object-store-memory", "1000000"}, with(head, func(c *nodeconfig.Config) { c.ObjectStoreMemory = 1e6 })},
		{[]string{"--head", "--worker-binary", bin}, with(head, func(c *nodeconfig.Config) { c.WorkerBinary = bin })},
		{[]string{"--head", "--amm", "--amm-interval", "500ms", "--amm-policies", "Replicate,Rebalance:0.05"}, with(head, func(c *nodeconfig.Config) {
			c.AMM, c.AMMInterval, c.AMMPolicies = true, 500*time.Millisecond, []amm.Policy{amm.Replicate{}, amm.Rebalance{Threshold: 0.05}}
		})},
		{[]string{"--head", "--fault-injection"}, with(head, func(c *nodeconfig.Config) { c.FaultInjection = true })},
		{[]string{"--head", "--dashboard-port", "0"}, with(head, func(c *nodeconfig.Config) { c.DashboardPort, c.RandomPorts = 0, true })},
		{[]string{"--head", "--dashboard-port", "9000", "--dashboard-trace-url", "http://jaeger:16686/trace/{trace_id}"}, with(head, func(c *nodeconfig.Config) {
			c.DashboardPort, c.DashboardTraceURL = 9000, "http://jaeger:16686/trace/{trace_id}"
		})},
		{[]string{"--head", "--include-dashboard=false"}, with(head, func(c *nodeconfig.Config) { c.Dashboard, c.DashboardPort = false, 0 })},
		{[]string{"--address", "10.0.0.1:6380", "--log-file", "/var/log/atoll.log"}, with(worker, func(c *nodeconfig.Config) { c.LogFile = "/var/log/atoll.log" })},
		// A metrics port given is one the node must serve on.
		{[]string{"--head", "--metrics-port", "9100"}, with(head, func(c *nodeconfig.Config) { c.MetricsPort, c.MetricsBestEffort = 9100, false })},
		{[]string{"--head", "--metrics-port", "0"}, with(head, func(c *nodeconfig.Config) { c.MetricsPort, c.MetricsBestEffort = 0, false })},
	} {
		got, err := parseStart(tc.args...)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

func TestStartConfigErrors(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--head", "--address", "10.0.0.1:6380"}, "--head and --address conflict"},
		{[]string{"--head", "--address", ""}, "--head and --address conflict"},
		{[]string{"--address", ""}, "--address is empty"},
		{[]string{"--address", "10.0.0.1"}, `--address "10.0.0.1": want HOST:PORT`},
		{[]string{"--address", "10.0.0.1:99999"}, `port "99999": want 1 to 65535`},
		{[]string{"--address", "10.0.0.1:6380", "--port", "0"}, "--port needs --head"},
		{[]string{"--address", "10.0.0.1:6380", "--nats", "127.0.0.1:4222"}, "--nats needs --head"},
		{[]string{"--head", "--nats", "127.0.0.1:4222", "--port", "4000"}, "--port and --nats conflict"},
		{[]string{"--head", "--nats", "127.0.0.1:4222", "--gcs-dir", "/tmp/x"}, "--gcs-dir and --nats conflict"},
		{[]string{"--address", "10.0.0.1:6380", "--gcs-dir", "/tmp/x"}, "--gcs-dir needs --head"},
		{[]string{"--head", "--gcs-dir", ""}, "--gcs-dir: want a directory"},
		{[]string{"--head", "--nats", "nats://"}, `--nats "nats://": want HOST:PORT`},
		{[]string{"--head", "--port", "65536"}, "--port 65536: want a port from 0 to 65535"},
		{[]string{"--head", "--gossip-port", "-1"}, "--gossip-port -1: want a port from 0 to 65535"},
		{[]string{"--head", "--metrics-port", "-1"}, "--metrics-port -1: want a port from 1 to 65535"},
		{[]string{"--head", "--node-ip", "my-host"}, `--node-ip "my-host": want an IP address`},
		{[]string{"--head", "--num-cpus", "-2"}, "--num-cpus -2: want a number >= 0"},
		{[]string{"--head", "--resources", "GPU"}, `entry "GPU": want NAME=N`},
		{[]string{"--head", "--resources", "GPU=1,,disk=1"}, `entry "": want NAME=N`},
		{[]string{"--head", "--resources", "GPU=many"}, "GPU=many: not a number"},
		{[]string{"--head", "--resources", "GPU=1,GPU=2"}, "GPU given twice"},
		{[]string{"--head", "--resources", "GPU=-1"}, "GPU=-1: want a non-negative number"},
		{[]string{"--head", "--resources", "CPU=4"}, "give CPUs with --num-cpus"},
		{[]string{"--head", "--resources", `{"GPU": "one"}`}, "not a JSON object of numbers"},
		{[]string{"--head", "--resources", `{"GPU": 1} x`}, "text after the JSON object"},
		{[]string{"--head", "--resources", `{"a b": 1}`}, `bad resource name "a b"`},
		{[]string{"--head", "--object-store-memory", "12XB"}, `--object-store-memory: size "12XB": unknown unit`},
		{[]string{"--head", "--object-store-memory", "lots"}, `--object-store-memory: size "lots": not a number`},
		{[]string{"--head", "--object-store-memory", "0"}, `--object-store-memory "0": want a positive size`},
		{[]string{"--head", "--worker-binary", "/no/such/binary"}, `--worker-binary "/no/such/binary"`},
		{[]string{"--head", "--worker-binary", os.TempDir()}, "not an executable file"},
		{[]string{"--head", "--failure-timeout", "0s"}, "--failure-timeout 0s: want a positive duration"},
		{[]string{"--address", "10.0.0.1:6380", "--amm"}, "are for the head"},
		{[]string{"--head", "--amm-interval", "-1s"}, "--amm-interval -1s"},
		{[]string{"--head", "--amm-policies", "Shuffle"}, "Shuffle"},
		{[]string{"--address", "10.0.0.1:6380", "--fault-injection"}, "--fault-injection is for the head"},
		{[]string{"--address", "10.0.0.1:6380", "--dashboard-port", "9000"}, "--dashboard-port is for the head"},
		{[]string{"--address", "10.0.0.1:6380", "--include-dashboard"}, "--include-dashboard is for the head"},
		{[]string{"--head", "--include-dashboard=false", "--dashboard-port", "9000"}, "need the dashboard"},
		{[]string{"--head", "--dashboard-port", "70000"}, "--dashboard-port 70000: want a port from 0 to 65535"},
		{[]string{"--head", "--dashboard-trace-url", "jaeger/{trace_id}"}, "want an http(s) URL with {trace_id}"},
		{[]string{"--head", "--dashboard-trace-url", "http://jaeger:16686/trace/"}, "want an http(s) URL with {trace_id}"},
	} {
		_, err := parseStart(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
			continue
		}
		if !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%q: %v is not atoll.ErrInvalidArgument", tc.args, err)
		}
	}
}

// A node that is not a head joins --address, else $ATOLL_ADDRESS, else
// the address the local head recorded.
func TestStartAddress(t *testing.T) {
	isolate(t)
	_, err := parseStart()
	if !errors.Is(err, atoll.ErrNotFound) || !strings.Contains(err.Error(), "give --head to start a new cluster or --address HOST:PORT") {
		t.Fatalf("no address anywhere: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(nodeconfig.AddressFile()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodeconfig.AddressFile(), []byte("127.0.0.1:7000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, "nats://127.0.0.1:7000"},
		{"", []string{"--address", "auto"}, "nats://127.0.0.1:7000"},
		{"10.0.0.9:6380", nil, "nats://10.0.0.9:6380"},
		{"10.0.0.9:6380", []string{"--address", "10.0.0.8:6380"}, "nats://10.0.0.8:6380"},
		{"auto", nil, "nats://127.0.0.1:7000"},
	} {
		t.Setenv(nodeconfig.EnvAddress, tc.env)
		cfg, err := parseStart(tc.args...)
		if err != nil || cfg.Address != tc.want || cfg.Head {
			t.Errorf("env %q, args %q: address %q, %v; want %q", tc.env, tc.args, cfg.Address, err, tc.want)
		}
	}
	t.Setenv(nodeconfig.EnvAddress, "10.0.0.9")
	if _, err := parseStart(); err == nil || !strings.Contains(err.Error(), `$ATOLL_ADDRESS "10.0.0.9": want HOST:PORT`) {
		t.Errorf("bad $ATOLL_ADDRESS: %v", err)
	}
}

// A bad flag fails the command before it starts anything.
func TestStartCommandErrors(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"start", "--head", "--address", "10.0.0.1:6380"},
		{"start", "--head", "extra"},
		{"start", "--head", "--port", "many"},
		{"start", "--head", "--block", "--resources", "CPU=1"},
	} {
		_, stderr, err := execute(args...)
		if err == nil || !strings.HasPrefix(stderr, "atoll: "+errorText(err)+"\n") || strings.Contains(stderr, "atoll: atoll") {
			t.Errorf("%q: error %v, stderr %q", args, err, stderr)
		}
	}
	if _, err := os.Stat(nodesDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed start touched %s: %v", nodesDir(), err)
	}
}

// The background node process gets the same flags, plus --block.
func TestStartChildArgs(t *testing.T) {
	isolate(t)
	args := []string{"--head", "--port", "0", "--resources", "GPU=1,disk=2", "--object-store-memory", "64MiB",
		"--num-cpus", "1.5", "--failure-timeout", "1500ms", "--node-ip", "127.0.0.2"}
	cmd, f := startCommand()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	want, err := f.nodeConfig(cmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	child := childArgs(cmd)
	if child[0] != "start" || child[len(child)-1] != "--block" {
		t.Fatalf("child args %q", child)
	}
	cmd2, f2 := startCommand()
	if err := cmd2.ParseFlags(child[1:]); err != nil {
		t.Fatal(err)
	}
	got, err := f2.nodeConfig(cmd2.Flags())
	if err != nil || !f2.block || !reflect.DeepEqual(got, want) {
		t.Errorf("child args %q give %+v (block %v, %v), want %+v", child, got, f2.block, err, want)
	}
}

func TestStatusTable(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	st := &clusterclient.Status{
		Address: "nats://127.0.0.1:6380",
		Nodes: []clusterclient.NodeStatus{
			{NodeID: "bbbbbbbb11112222", Hostname: "w1", Alive: true, Reporting: true,
				Total: map[string]float64{"CPU": 4, "GPU": 1}, Available: map[string]float64{"CPU": 2.5, "GPU": 0},
				Queued: 3, Running: 2, StoreUsed: 3 << 29, StoreCap: 2 << 30, Pulls: 7, Bundles: 2},
			{NodeID: "cccccccc33334444", Hostname: "w2", Alive: false, Total: map[string]float64{"CPU": 4}, Available: map[string]float64{"CPU": 4},
				EndReason: "declared dead: no gossip answer within the failure timeout", EndTime: now.Add(-90 * time.Second)},
			{NodeID: "99999999", Hostname: "w4", Left: true, EndReason: "drained", EndTime: now.Add(-5 * time.Minute)},
			{NodeID: "88888888", Hostname: "w5", Left: true, EndReason: "stopped", EndTime: now.Add(-2 * time.Hour)},
			{NodeID: "dddddddd", Hostname: "laptop", Driver: true, Alive: true, Reporting: true},
			{NodeID: "ffffffff", Hostname: "w3", Alive: true},
			{NodeID: "eeeeeeee", Hostname: "laptop", Driver: true, Alive: false},
			{NodeID: "aaaaaaaa55556666", Hostname: "h", IsHead: true, Alive: true, Reporting: true,
				Total: map[string]float64{"CPU": 8, "memory": 1 << 30}, Available: map[string]float64{"CPU": 8, "memory": 1 << 29},
				StoreUsed: 0, StoreCap: 256 << 20},
		},
	}
	var out bytes.Buffer
	if err := printStatus(&out, st, false, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		`^cluster 127\.0\.0\.1:6380$`,
		`^NODE +ROLE +STATE +HOST +CPU USED/TOTAL +RESOURCES USED/TOTAL +STORE USED/TOTAL +QUEUED +RUNNING +BUNDLES +PULLS +ENDED$`,
		`^aaaaaaaa +head +ALIVE +h +0/8 +memory 512MiB/1GiB +0B/256MiB +0 +0 +0 +0 +-$`,
		`^bbbbbbbb +worker +ALIVE +w1 +1\.5/4 +GPU 1/1 +1\.5GiB/2GiB +3 +2 +2 +7 +-$`,
		`^ffffffff +worker +SILENT +w3 +-/0 +- +0B/0B +0 +0 +0 +0 +-$`,
		`^99999999 +worker +LEFT +w4 +-/0 +- +0B/0B +0 +0 +0 +0 +drained, 5m0s ago$`,
		`^cccccccc +worker +DEAD +w2 +-/4 +- +0B/0B +0 +0 +0 +0 +declared dead: no gossip answer within the failure timeout, 1m30s ago$`,
		`^dddddddd +driver +ALIVE +laptop +0/0 +- +0B/0B +0 +0 +0 +0 +-$`,
		`^3 nodes alive \(1 head, 1 worker, 1 driver\), 1 left, 1 dead, 1 silent \(no load report\); 1 finished driver and 1 node gone over 1h0m0s ago not listed \(--all\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %q", i, lines[i], want)
		}
	}
	out.Reset()
	if err := printStatus(&out, &clusterclient.Status{Nodes: []clusterclient.NodeStatus{{NodeID: "ab", IsHead: true, Alive: true, Reporting: true}}}, false, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "\n1 node alive (1 head, 0 workers), 0 left, 0 dead\n") {
		t.Errorf("one node:\n%s", out.String())
	}
	out.Reset()
	if err := printStatus(&out, st, true, 0, now); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`eeeeeeee +driver +DEAD .* no reason recorded\n`).MatchString(out.String()) ||
		!regexp.MustCompile(`88888888 +worker +LEFT .* stopped, 2h0m0s ago\n`).MatchString(out.String()) ||
		!strings.HasSuffix(out.String(), "2 left, 2 dead, 1 silent (no load report)\n") {
		t.Errorf("--all lists the finished driver and the node gone long ago:\n%s", out.String())
	}
}

// helperNode makes this test binary a stand-in node process for the stop
// tests: "term" exits on SIGTERM, "ignore" ignores it.
const helperNode = "ATOLL_CMD_TEST_HELPER_NODE"

func TestHelperNodeProcess(t *testing.T) {
	mode := os.Getenv(helperNode)
	if mode == "" {
		t.Skip("a stand-in node process for the stop tests")
	}
	if mode == "ignore" {
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Println("ready")
	<-time.After(2 * time.Minute)
	t.Fatal("not stopped within 2 minutes")
}

// startHelperNode starts a stand-in node process (its arguments have
// --block, as a node's do) and writes its record.
func startHelperNode(t *testing.T, mode string, head bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNodeProcess$", "--", "--block")
	cmd.Env = append(os.Environ(), helperNode+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The signal disposition is set once it prints a line.
	if _, err := stdout.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	pid := cmd.Process.Pid
	rec := nodeRecord{NodeReady: node.NodeReady{NodeID: fmt.Sprintf("%08x", pid), Address: "127.0.0.1:" + strconv.Itoa(pid%60000+1), PID: pid}, Head: head}
	data, _ := json.Marshal(rec)
	if err := writeFileAtomic(recordFile(pid), data); err != nil {
		t.Fatal(err)
	}
	if head {
		if err := writeFileAtomic(nodeconfig.AddressFile(), []byte(rec.Address+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	return cmd
}

func TestStopCommand(t *testing.T) {
	isolate(t)
	stdout, _, err := execute("stop")
	if err != nil || stdout != "stopped 0 atoll node(s)\n" {
		t.Fatalf("stop with no nodes: %q, %v", stdout, err)
	}
	// A job binary the nodes kept: --keep-files keeps it, a stop removes it.
	binary := filepath.Join(jobs.BinariesDir(), strings.Repeat("ab", 32), "prog")
	if err := os.MkdirAll(filepath.Dir(binary), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, make([]byte, 3<<20), 0o700); err != nil {
		t.Fatal(err)
	}
	if stdout, _, err := execute("stop", "--keep-files"); err != nil || stdout != "stopped 0 atoll node(s)\n" {
		t.Fatalf("stop --keep-files: %q, %v", stdout, err)
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("stop --keep-files removed the job binary: %v", err)
	}

	// A process that is not a node (no --block) is left alone, although a
	// record names it: its pid was reused.
	other := exec.Command(os.Args[0], "-test.run=^TestHelperNodeProcess$")
	other.Env = append(os.Environ(), helperNode+"=term")
	other.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	otherOut, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan struct{})
	go func() {
		_, _ = otherOut.Read(make([]byte, 1))
		_ = other.Wait()
		close(otherDone)
	}()
	defer func() {
		_ = other.Process.Kill()
		<-otherDone
	}()
	stale := []string{
		recordFile(other.Process.Pid),
		recordFile(1 << 30), // no such process
		filepath.Join(nodesDir(), "junk.json"),
	}
	for i, path := range stale {
		pid := other.Process.Pid
		if i == 1 {
			pid = 1 << 30
		}
		data := fmt.Appendf(nil, `{"node_id":"x","address":"a:1","pid":%d}`, pid)
		if i == 2 {
			data = []byte("{")
		}
		if err := writeFileAtomic(path, data); err != nil {
			t.Fatal(err)
		}
	}

	worker := startHelperNode(t, "term", false)
	head := startHelperNode(t, "ignore", true) // killed after --timeout
	var out, errOut bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"stop", "--timeout", "500ms"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("stop: %v\n%s", err, errOut.String())
	}
	if out.String() != "stopped 2 atoll node(s)\nremoved 3MiB of job binaries\n" {
		t.Errorf("stop printed %q (stderr %q)", out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "removing bad node record") {
		t.Errorf("stderr %q", errOut.String())
	}
	for _, c := range []*exec.Cmd{worker, head} {
		if processAlive(c.Process.Pid) {
			t.Errorf("pid %d still alive", c.Process.Pid)
		}
	}
	select {
	case <-otherDone:
		t.Error("stop signalled a process that is not a node")
	default:
	}
	if left, _ := os.ReadDir(nodesDir()); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
	if _, err := os.Stat(jobs.BinariesDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job binaries after stop: %v", err)
	}
	if _, err := os.Stat(nodeconfig.AddressFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("address file of the stopped head: %v", err)
	}
	if _, _, err := execute("stop", "--timeout", "0s"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Errorf("stop --timeout 0s: %v", err)
	}
}

// waitRecordFile waits until the record file of pid exists, failing the
// test if done delivers (the node stopped) or after a minute.
func waitRecordFile(t *testing.T, pid int, done <-chan error, out fmt.Stringer) nodeRecord {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(recordFile(pid)); err == nil {
			var rec nodeRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatalf("record: %v", err)
			}
			return rec
		}
		select {
		case err := <-done:
			t.Fatalf("start --block returned before the node was ready: %v\noutput:\n%s", err, out)
		case <-deadline.C:
			t.Fatalf("no record file %s after a minute; output:\n%s", recordFile(pid), out)
		case <-tick.C:
		}
	}
}

// checkOneHead checks `status --json` shows exactly one node, the alive
// head rec.
func checkOneHead(t *testing.T, rec nodeRecord, args ...string) {
	t.Helper()
	stdout, stderr, err := execute(append([]string{"status", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	var st clusterclient.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	if len(st.Nodes) != 1 {
		t.Fatalf("status shows %d nodes, want 1:\n%s", len(st.Nodes), stdout)
	}
	n := st.Nodes[0]
	if !n.Alive || !n.IsHead || n.NodeID != rec.NodeID || n.Total["CPU"] != 2 || n.StoreCap != 64<<20 {
		t.Errorf("status node %+v, want the alive head %s with 2 CPUs and a 64MiB store", n, rec.NodeID)
	}
}

// TestStartStatusStop runs a head in this process (start --block), checks
// status sees it, and stops it by cancelling the command's context.
func TestStartStatusStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	isolate(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testutil.LogBuffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"start", "--head", "--port", "0", "--gossip-port", "0", "--transfer-port", "0", "--dashboard-port", "0",
		"--num-cpus", "2", "--object-store-memory", "64MiB", "--block"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	rec := waitRecordFile(t, os.Getpid(), done, &out)
	if !rec.Head || rec.NodeID == "" || rec.Address == "" || rec.PID != os.Getpid() {
		t.Errorf("record %+v", rec)
	}
	addr, err := os.ReadFile(nodeconfig.AddressFile())
	if err != nil || strings.TrimSpace(string(addr)) != displayAddress(rec.Address) {
		t.Errorf("address file %q, %v; want %s", addr, err, rec.Address)
	}
	secret, err := clusterkey.Load(nodeconfig.SecretFile())
	if err != nil {
		t.Fatalf("the head's secret file: %v", err)
	}
	for _, want := range []string{"atoll node " + rec.NodeID + " started (pid ", "cluster address: " + displayAddress(rec.Address),
		"cluster secret: " + nodeconfig.SecretFile(), "generated now, shown this once: " + secret.Hex()} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("start output lacks %q:\n%s", want, out.String())
		}
	}
	other, _ := clusterkey.Generate()
	t.Setenv(nodeconfig.EnvSecret, other.Hex())
	if _, _, err := execute("status"); !errors.Is(err, atoll.ErrUnauthenticated) {
		t.Errorf("status with another cluster's secret: %v, want ErrUnauthenticated", err)
	}
	t.Setenv(nodeconfig.EnvSecret, "")

	checkOneHead(t, rec, "--address", displayAddress(rec.Address))
	checkOneHead(t, rec) // the recorded address
	stdout, stderr, err := execute("status")
	if err != nil || !strings.HasSuffix(stdout, "1 node alive (1 head, 0 workers), 0 left, 0 dead\n") {
		t.Errorf("status: %v\n%s%s", err, stdout, stderr)
	}
	stdout, stderr, err = execute("list", "nodes")
	if err != nil || !regexp.MustCompile(`(?m)^`+rec.NodeID[:8]+` +head +ALIVE +\S+ +CPU 2`).MatchString(stdout) {
		t.Errorf("list nodes: %v\n%s%s", err, stdout, stderr)
	}
	for _, kind := range []string{"actors", "jobs"} {
		if stdout, stderr, err := execute("list", kind); err != nil || stdout != "no "+kind+"\n" {
			t.Errorf("list %s on a cluster without drivers: %v\n%s%s", kind, err, stdout, stderr)
		}
	}
	if stdout, _, err := execute("list", "nodes", "--json"); err != nil || !strings.Contains(stdout, `"role": "head"`) || !strings.Contains(stdout, `"node_id": "`+rec.NodeID+`"`) {
		t.Errorf("list nodes --json: %v\n%s", err, stdout)
	}
	for kind, want := range map[string]string{"tasks": "no finished tasks (nodes keep their last 4096)\n", "objects": "no objects\n"} {
		if stdout, stderr, err := execute("list", kind); err != nil || stdout != want {
			t.Errorf("list %s on a cluster without drivers: %v\n%s%s", kind, err, stdout, stderr)
		}
	}
	if stdout, stderr, err := execute("memory"); err != nil || !regexp.MustCompile(`(?m)^\s*`+rec.NodeID[:8]+` +head +\S+ +64MiB`).MatchString(stdout) {
		t.Errorf("memory: %v\n%s%s", err, stdout, stderr)
	}
	for _, c := range []struct{ op, want string }{{"status", "stopped"}, {"start", "running"}, {"status", "running"}, {"stop", "stopped"}} {
		if stdout, stderr, err := execute("amm", c.op); err != nil || !strings.HasPrefix(stdout, "Active Memory Manager: "+c.want+", every 2s, policies Replicate, ReduceReplicas\n") {
			t.Errorf("amm %s: %v\n%s%s", c.op, err, stdout, stderr)
		}
	}
	if _, _, err := execute("amm", "pause"); err == nil {
		t.Error("amm pause: no error")
	}
	if _, _, err := execute("drain", rec.NodeID[:8]); !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "is the head") {
		t.Errorf("drain the head: %v, want ErrInvalidArgument", err)
	}
	if _, _, err := execute("drain", "ffff0000"); !errors.Is(err, atoll.ErrNotFound) {
		t.Errorf("drain an unknown node: %v, want ErrNotFound", err)
	}
	if _, _, err := execute("drain", "ab"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Errorf("drain ab: %v, want ErrInvalidArgument", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("start --block: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("start --block did not return a minute after its context was cancelled")
	}
	for _, path := range []string{recordFile(os.Getpid()), nodeconfig.AddressFile()} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the node stopped: %v", path, err)
		}
	}
}

// TestStartDetachedStop runs `atoll start --head` as a program: it starts
// the node in the background and returns; `atoll stop` stops it.
func TestStartDetachedStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	isolate(t)
	t.Cleanup(func() { // kill what stop did not
		recs, _ := readRecords(&bytes.Buffer{})
		for _, e := range recs {
			if isNodeProcess(e.rec.PID) {
				_ = syscall.Kill(e.rec.PID, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "start", "--head", "--port", "0", "--gossip-port", "0", "--transfer-port", "0",
		"--dashboard-port", "0", "--num-cpus", "2", "--object-store-memory", "64MiB")
	cmd.Env = append(os.Environ(), runAsCommand+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("atoll start: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	m := regexp.MustCompile(`atoll node [0-9a-f]+ started \(pid (\d+), log (\S+)\)`).FindStringSubmatch(stdout.String())
	if m == nil || !strings.Contains(stdout.String(), "cluster address: ") || !strings.Contains(stdout.String(), "join more nodes: atoll start --address ") {
		t.Fatalf("start output:\n%s", stdout.String())
	}
	pid, _ := strconv.Atoi(m[1])
	if !strings.HasPrefix(m[2], logsDir()) {
		t.Errorf("log %s is not in %s", m[2], logsDir())
	}
	data, err := os.ReadFile(recordFile(pid))
	if err != nil {
		t.Fatal(err)
	}
	var rec nodeRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	checkOneHead(t, rec)
	checkDashboard(t, stdout.String(), rec, m[2])

	out, errOut, err := execute("stop")
	if err != nil || out != "stopped 1 atoll node(s)\n" {
		t.Fatalf("stop: %q, %v\n%s", out, err, errOut)
	}
	if processAlive(pid) {
		t.Errorf("node pid %d alive after stop", pid)
	}
	for _, path := range []string{recordFile(pid), nodeconfig.AddressFile()} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after stop: %v", path, err)
		}
	}
	if log, err := os.ReadFile(m[2]); err != nil || !strings.Contains(string(log), "stopped") {
		t.Errorf("node log: %v\n%s", err, log)
	}
}

func TestMemoryTable(t *testing.T) {
	st := &clusterclient.Status{Nodes: []clusterclient.NodeStatus{
		{NodeID: "bbbbbbbb22", Alive: true, Reporting: true, StoreUsed: 3 << 29, StoreCap: 2 << 30, Objects: 4,
			SpilledBytes: 1 << 30, SpillFiles: 2, SpilledTotal: 3 << 30, RestoredTotal: 2 << 30, Pulls: 5, PulledBytes: 5 << 20},
		{NodeID: "aaaaaaaa11", IsHead: true, Alive: true, Reporting: true, StoreUsed: 1 << 20, StoreCap: 1 << 30, PinnedBytes: 1 << 20, Objects: 1},
		{NodeID: "cccccccc33", Alive: false},
	}}
	var out bytes.Buffer
	if err := printMemory(&out, st, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want header, 2 live nodes and the total:\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		`NODE +ROLE +USED +CAPACITY +PINNED +OBJECTS +SPILLED NOW +FILES +SPILLED TOTAL +RESTORED TOTAL +PULLS +PULLED`,
		`aaaaaaaa +head +1MiB +1GiB +1MiB +1 +0B +0 +0B +0B +0 +0B`,
		`bbbbbbbb +worker +1.5GiB +2GiB +0B +4 +1GiB +2 +3GiB +2GiB +5 +5MiB`,
		`^total +- +1.5GiB +3GiB +1MiB +5 +1GiB +2 +3GiB +2GiB +5 +5MiB$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %q", i, lines[i], want)
		}
	}
	out.Reset()
	if err := printMemory(&out, st, true); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nodes []memoryRow
		Total memoryRow
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Nodes) != 2 || doc.Nodes[0].Role != "head" || doc.Nodes[1].SpilledBytes != 1<<30 ||
		doc.Total.UsedBytes != 3<<29+1<<20 {
		t.Fatalf("--json: %v %+v", err, doc)
	}
}

func TestAMMStatusText(t *testing.T) {
	st := &clusterclient.AMMStatus{Enabled: true, Interval: 2 * time.Second, Policies: []string{"Replicate", "ReduceReplicas"}, Rounds: 7,
		Nodes: 3, Objects: 10, Copies: 14, Dropped: 4, Replicated: 2, Refused: map[string]uint64{"primary": 3, "last-copy": 1},
		Drains: []clusterclient.DrainStatus{{NodeID: "cccccccc33", Start: time.Now().Add(-3 * time.Second), ObjectsLeft: 2, BytesLeft: 3 << 20, Running: 1, State: "moving objects"}}}
	var out bytes.Buffer
	if err := printAMM(&out, st, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^Active Memory Manager: running, every 2s, policies Replicate, ReduceReplicas$`,
		`(?m)^rounds 7; last snapshot: 3 nodes, 10 objects, 14 copies$`,
		`(?m)^copies dropped 4, made 2 \(no room 0, failed 0\)`,
		`(?m)^suggestions refused: last-copy 1, primary 3$`,
		`(?m)^DRAIN +SINCE +OBJECTS LEFT +BYTES LEFT +QUEUED +RUNNING +STATE$`,
		`(?m)^cccccccc +3s +2 +3MiB +0 +1 +moving objects$`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("amm status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := printAMM(&out, st, true); err != nil {
		t.Fatal(err)
	}
	var back clusterclient.AMMStatus
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Rounds != 7 || len(back.Drains) != 1 || back.Drains[0].BytesLeft != 3<<20 {
		t.Fatalf("--json: %v %+v", err, back)
	}
}

func TestChromeTrace(t *testing.T) {
	start := time.Unix(1000, 0)
	events := []clusterclient.TimelineEvent{
		{NodeID: "aaaaaaaa11", WorkerID: "w1w1w1w1", TaskID: "t1", Name: "f", Start: start, End: start.Add(2 * time.Millisecond)},
		{NodeID: "aaaaaaaa11", WorkerID: "w2w2w2w2", TaskID: "t2", Name: "g", Start: start, End: start.Add(time.Millisecond), Failed: true},
		{NodeID: "bbbbbbbb22", WorkerID: "w3w3w3w3", TaskID: "t3", Name: "f", Start: start.Add(time.Millisecond), End: start.Add(3 * time.Millisecond)},
		// A node's transfers and spills are threads of their own.
		{NodeID: "aaaaaaaa11", WorkerID: "0000", Name: "pull", Kind: raylet.EventTransfer, Bytes: 4 << 20, Detail: "from node bbbbbbbb",
			Start: start, End: start.Add(time.Millisecond)},
		{NodeID: "aaaaaaaa11", WorkerID: "0000", Name: "spill", Kind: raylet.EventSpill, Bytes: 1 << 20, Start: start, End: start.Add(time.Millisecond)},
		{NodeID: "aaaaaaaa11", WorkerID: "w1w1w1w1", TaskID: "t4", Name: "C.m", Kind: raylet.EventActorCall, Start: start, End: start.Add(time.Millisecond)},
	}
	var out bytes.Buffer
	if err := writeChromeTrace(&out, events); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []chromeEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(out.Bytes(), &trace); err != nil {
		t.Fatal(err)
	}
	var slices, procs, threads int
	for _, e := range trace.TraceEvents {
		switch {
		case e.Ph == "X":
			slices++
			if e.Name == "g" && (e.Cat != "task,failed" || e.Dur != 1000 || e.TS != start.UnixMicro()) {
				t.Errorf("failed slice %+v", e)
			}
			if e.Name == "pull" && (e.Cat != raylet.EventTransfer || e.Args["bytes"] != float64(4<<20) || e.Args["detail"] != "from node bbbbbbbb") {
				t.Errorf("transfer slice %+v", e)
			}
			if e.Name == "C.m" && (e.Cat != raylet.EventActorCall || e.Args["task_id"] != "t4") {
				t.Errorf("actor call slice %+v", e)
			}
		case e.Name == "process_name":
			procs++
		case e.Name == "thread_name":
			threads++
		}
	}
	if slices != 6 || procs != 2 || threads != 5 {
		t.Fatalf("%d slices, %d processes, %d threads; want 6, 2, 5:\n%s", slices, procs, threads, out.String())
	}
}
