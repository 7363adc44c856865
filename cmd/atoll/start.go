package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// startFlags holds the flags of `atoll start`: the node's settings,
// bound to its config's fields (nodeconfig.BindFlags), and --block.
type startFlags struct {
	cfg      nodeconfig.Config
	settings *nodeconfig.Flags
	block    bool
	creds    credentialFlags
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
	f.settings = nodeconfig.BindFlags(fl, &f.cfg)
	fl.BoolVar(&f.block, "block", false, "run the node in the foreground until SIGINT or SIGTERM")
	return cmd, f
}

// nodeConfig checks the flags and returns the node's config: the
// settings the flags set, after the command line's rules (which flags
// are a head's, which a joining node's; the address a node joins).
// Errors are atoll.ErrInvalidArgument (bad or conflicting flags) or
// atoll.ErrNotFound (no address given and none recorded).
func (f *startFlags) nodeConfig(fs *pflag.FlagSet) (nodeconfig.Config, error) {
	cfg := f.cfg
	if err := headFlags(fs, &cfg); err != nil {
		return cfg, err
	}
	if !cfg.Head {
		addr, err := joinAddress(fs.Changed("address"), cfg.Address)
		if err != nil {
			return cfg, err
		}
		cfg.Address = addr
	}
	if err := f.settings.Check(); err != nil {
		return cfg, err
	}
	if err := f.settings.Validate(&cfg); err != nil {
		return cfg, err
	}
	return cfg, f.creds.apply(&cfg)
}

// headFlags applies the rules of the flags only a head takes (or only a
// joining node): a flag given to the wrong kind of node is an error, and
// a joining node gets none of a head's defaults (the dashboard).
func headFlags(fs *pflag.FlagSet, cfg *nodeconfig.Config) error {
	if cfg.Head {
		switch {
		case fs.Changed("address"):
			return errs.Invalidf("--head and --address conflict: a head starts a new cluster, --address joins an existing one")
		case cfg.NATSURL != "" && fs.Changed("port"):
			return errs.Invalidf("--port and --nats conflict: with --nats the head runs no NATS server of its own")
		case cfg.NATSURL != "" && fs.Changed("gcs-dir"):
			return errs.Invalidf("--gcs-dir and --nats conflict: with --nats the GCS keeps its state on that NATS server")
		case !cfg.Dashboard && (fs.Changed("dashboard-port") || fs.Changed("dashboard-trace-url") || fs.Changed("dashboard-host") || fs.Changed("dashboard-host-names")):
			return errs.Invalidf("--dashboard-port, --dashboard-host, --dashboard-host-names and --dashboard-trace-url need the dashboard: drop --include-dashboard=false")
		}
		if !cfg.Dashboard {
			cfg.DashboardPort = 0
		}
		return nil
	}
	switch {
	case fs.Changed("gcs-dir"):
		return errs.Invalidf("--gcs-dir needs --head: it holds the head's GCS state")
	case cfg.NATSURL != "":
		return errs.Invalidf("--nats needs --head: only the head connects the cluster to a NATS server; other nodes join --address")
	case fs.Changed("port"):
		return errs.Invalidf("--port needs --head: it is the head's NATS port; other nodes join --address and use --gossip-port and --transfer-port")
	case fs.Changed("amm") || fs.Changed("amm-interval") || fs.Changed("amm-policies"):
		return errs.Invalidf("--amm, --amm-interval and --amm-policies are for the head (--head): it runs the Active Memory Manager")
	case fs.Changed("fault-injection"):
		return errs.Invalidf("--fault-injection is for the head (--head): its NATS server decides who may inject faults")
	}
	for _, name := range []string{"include-dashboard", "dashboard-port", "dashboard-trace-url", "dashboard-host", "dashboard-host-names"} {
		if fs.Changed(name) {
			return errs.Invalidf("--%s is for the head (--head): it serves the cluster's dashboard", name)
		}
	}
	cfg.Dashboard, cfg.DashboardPort = false, 0
	return nil
}

// joinAddress is the cluster address a non-head node joins: --address,
// else $ATOLL_ADDRESS, else the address the local head recorded.
func joinAddress(given bool, address string) (string, error) {
	name := "--address"
	if !given {
		address, name = nodeconfig.AddressFromEnv(), "$"+nodeconfig.EnvAddress
	}
	if given && strings.TrimSpace(address) == "" {
		return "", errs.Invalidf("--address is empty: want HOST:PORT of the head (or \"auto\")")
	}
	if address == "" || address == "auto" {
		u, err := clusterclient.ResolveAddress("auto")
		if err != nil {
			return "", fmt.Errorf("give --head to start a new cluster or --address HOST:PORT to join one: %w", err)
		}
		return nodeconfig.NATSURL(nodeconfig.AddressFile(), u)
	}
	return nodeconfig.NATSURL(name, address)
}

// stateDir is nodeconfig.StateDir ($TMPDIR/atoll-<uid>), where `atoll
// start` keeps node records and logs.
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
