// Command chaos runs verified workloads on a local cluster of node
// processes under a seeded fault plan (package faultplan) and prints what
// was injected and what the checkers found:
//
//	go run ./samples/chaos                       # the default plan, seed 1
//	go run ./samples/chaos -seed 7 -duration 30s
//	go run ./samples/chaos -plan my-plan.yaml -json
//
// The plan goes to the node processes in a file (faultplan.EnvPlan) and
// to the driver (atoll.WithFaultPlan), which also runs its timed rules
// (fail the driver store's next creations; kill a node that is neither
// the head nor the driver's). The driver kills the worker of a running
// workload task every -kill-every, picked with the plan's seed.
//
// Workloads, run at once:
//   - sort: a sample sort of -sort-size bytes (default larger than one
//     node's store), verified sorted with the input's count and checksum;
//   - bank: accounts in branch actors pinned to the head, transfers sent
//     by the driver and by tasks as actor calls with sequence numbers;
//     checked for conservation of money and, per caller, calls applied in
//     order, each at most once (bank.go);
//   - task results: short tasks whose every submission and result the
//     driver records; each result must reach the driver exactly once and
//     stay the same (history.go).
//
// Every workload task that runs again (a retry, a rebuild of a lost
// output) says so to an actor on the head (reruns.go): the table's
// "tasks retried". At the end every live node's store must be back to
// zero with no spill file. Bank and task rounds go on for -duration, and until the sort is
// done and every timed rule of the plan has fired.
//
// Node processes are this program re-executed, served by atoll.Init like
// any node (node.RunFromEnv): each loads the plan into its own fault
// injector, whose log the driver reads with atolltest.GetClusterFaultLog
// (faultpoll.go). The table counts the faults of the driver's node and
// of every node process.
//
// A further checker, no-read-after-free, wants every live node's store
// to have counted no read of an object its owner had freed (the stores'
// StoreStats.reads_after_free_total, in the cluster status).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

type options struct {
	nodes          int
	cpus           float64
	store          benchfmt.Size
	driverStore    benchfmt.Size
	plan           string
	seed           *uint64
	duration       time.Duration
	maxDuration    time.Duration
	sortSize       benchfmt.Size
	partitions     int
	echoTasks      int
	echoHold       time.Duration
	bankTasks      int
	bankTransfers  int
	driverCalls    int
	killEvery      time.Duration
	retries        int
	failureTimeout time.Duration
	dir            string
	json           bool
}

func defaultOptions() options {
	return options{nodes: 3, cpus: 1, store: 256 << 20, driverStore: 64 << 20, duration: 20 * time.Second, maxDuration: 3 * time.Minute,
		sortSize: 320 << 20, partitions: 16, echoTasks: 8, echoHold: 50 * time.Millisecond, bankTasks: 2, bankTransfers: 20,
		driverCalls: 20, killEvery: 3 * time.Second, retries: 10, failureTimeout: 2 * time.Second}
}

func main() {
	ctx := context.Background()
	if atoll.IsWorker() {
		_ = atoll.Init(ctx) // a node or worker process of the cluster: serves, never returns
	}
	opts := defaultOptions()
	flag.IntVar(&opts.nodes, "nodes", opts.nodes, "nodes of the local cluster (the first is the head)")
	flag.Float64Var(&opts.cpus, "cpus", opts.cpus, "CPU slots of each node")
	flag.Var(&opts.store, "store", "object store memory of each node")
	flag.Var(&opts.driverStore, "driver-store", "object store memory of the driver's node")
	flag.StringVar(&opts.plan, "plan", "", "fault plan file (YAML; default: the built-in plan, see plan.go)")
	flag.Func("seed", "the plan's seed (default: the plan's own)", func(s string) error {
		v, err := strconv.ParseUint(s, 10, 64)
		opts.seed = &v
		return err
	})
	flag.DurationVar(&opts.duration, "duration", opts.duration, "how long bank and task rounds go on (at least)")
	flag.DurationVar(&opts.maxDuration, "max-duration", opts.maxDuration, "when rounds stop even if a timed rule has not fired, and workloads still running fail")
	flag.Var(&opts.sortSize, "sort-size", "bytes of int64s the sort workload sorts")
	flag.IntVar(&opts.partitions, "partitions", opts.partitions, "sort partitions")
	flag.IntVar(&opts.echoTasks, "echo-tasks", opts.echoTasks, "recorded tasks per round")
	flag.DurationVar(&opts.echoHold, "echo-hold", opts.echoHold, "how long each recorded task runs")
	flag.IntVar(&opts.bankTasks, "bank-tasks", opts.bankTasks, "transfer tasks per round")
	flag.IntVar(&opts.bankTransfers, "bank-transfers", opts.bankTransfers, "transfers each transfer task sends")
	flag.IntVar(&opts.driverCalls, "driver-calls", opts.driverCalls, "transfers the driver sends per round")
	flag.DurationVar(&opts.killEvery, "kill-every", opts.killEvery, "kill a running task's worker this often (0: never)")
	flag.IntVar(&opts.retries, "retries", opts.retries, "MaxRetries of every workload task")
	flag.DurationVar(&opts.failureTimeout, "failure-timeout", opts.failureTimeout, "time to declare a dead node dead (atoll's default is 5s)")
	flag.StringVar(&opts.dir, "dir", "", "keep the plan and node logs in this directory (default: a temporary one, removed)")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per figure (progress goes to stderr)")
	flag.Parse()
	ok, err := run(ctx, opts, os.Stdout, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		os.Exit(1)
	}
}

// run runs the workloads under the plan and reports; ok is false if a
// checker failed (the report says which), err if the run could not be
// made.
func run(ctx context.Context, opts options, stdout, stderr io.Writer) (ok bool, err error) {
	if opts.nodes < 2 || opts.cpus <= 0 || opts.partitions < 1 || opts.echoTasks < 1 || opts.bankTasks < 0 || opts.retries < 0 {
		return false, errors.New("chaos: want -nodes >= 2, -cpus > 0, -partitions >= 1, -echo-tasks >= 1, -bank-tasks >= 0, -retries >= 0")
	}
	p, err := loadPlan(opts.plan, opts.seed)
	if err != nil {
		return false, err
	}
	progress := benchfmt.NewProgress(stderr, "chaos")
	dir := opts.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "atoll-chaos-"); err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cluster"), 0o755); err != nil {
		return false, err
	}
	planFile, err := writePlan(dir, p)
	if err != nil {
		return false, err
	}
	progress.Phase(fmt.Sprintf("starting %d nodes (plan %s, seed %d, logs in %s)", opts.nodes, planName(opts.plan), p.Seed, filepath.Join(dir, "cluster")))
	c, err := localcluster.Start(ctx, localcluster.Options{Nodes: opts.nodes, Node: nodeconfig.Config{NumCPUs: opts.cpus, ObjectStoreMemory: uint64(opts.store), FailureTimeout: opts.failureTimeout},
		Dir: filepath.Join(dir, "cluster"), Env: []string{faultplan.EnvPlan + "=" + planFile}})
	if err != nil {
		return false, err
	}
	stopped := false
	stopCluster := func() {
		if !stopped {
			stopped = true
			c.Stop()
		}
	}
	defer stopCluster()
	o, err := drive(ctx, opts, p, c, progress)
	if err != nil {
		return false, err
	}
	stopCluster()
	if opts.json {
		if err := benchfmt.WriteAll(stdout, o.records(p, opts)); err != nil {
			return false, err
		}
	} else {
		o.printTable(stdout, p, opts)
	}
	return o.passed(), nil
}
