// Command atoll is atoll's command-line tool:
//
//   - `atoll start --head` starts a cluster's head node on this machine and
//     `atoll start --address HOST:PORT` joins more nodes to it (in the
//     background; --block keeps a node in the foreground);
//   - `atoll stop` stops every node started on this machine;
//   - `atoll status` shows the cluster's nodes, resources and load;
//   - `atoll list nodes|actors|jobs` lists what the GCS knows;
//   - `atoll memory` shows every node's object store and spilling, and
//     `atoll memory --sample INTERVAL -o FILE` samples its use over time
//     (CSV and an SVG plot, package memsample);
//   - `atoll timeline` writes the recent task attempts as a Chrome trace;
//   - `atoll job submit -- BINARY ARGS` runs a program as a job's driver on
//     the cluster (the binary is sent to the nodes), and `atoll job
//     list|status|logs|stop` follow and stop jobs;
//   - `atoll logs NODE|JOB|WORKER` prints a node's log, a job's output or
//     a worker process's output;
//   - `atoll microbenchmark` runs Ray's microbenchmark set on the embedded
//     local cluster against baselines measured in the same run;
//   - `atoll sim` runs a workload on a simulated cluster (package sim):
//     many seeds in parallel, or one replayed exactly with its event log;
//   - `atoll version` prints the version.
//
// A head started with `atoll start --head` also serves the web dashboard
// (package dashboard) on --dashboard-port, 8265 by default.
//
// The cluster commands are a thin layer over internal packages: `atoll
// start` runs node.Start; the queries call clusterclient (GetStatus,
// ListNodes, ListActors, ListJobs, GetTimeline), which the dashboard
// reads too, on the head's own connection; the job commands call jobs
// (Submit, Get, Stop, FollowLog).
//
// Every command prints in one style (output.go): --json is one JSON
// document, snake_case keys, hex ids; tables align text left and numbers
// right; sizes have binary units; a missing argument prints the usage;
// errors print once, without internal package prefixes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	_ "github.com/atoll-runtime/atoll/internal/autoscaler/kubernetes" // the autoscaler's "kubernetes" provider
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func main() {
	if os.Getenv(nodeconfig.EnvNode) != "" {
		// A node process the autoscaler's local provider started (the
		// head's own program, re-executed): it serves as that node.
		node.RunFromEnv()
	}
	// Interrupting a run cancels its context, so the embedded cluster and
	// its worker processes shut down cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		printError(os.Stderr, err)
		os.Exit(exitCode(err))
	}
}

// exitCode is the status atoll exits with after err: the job's own for a
// followed job that failed, else 1.
func exitCode(err error) int {
	if e, ok := errors.AsType[*jobEndError](err); ok {
		return e.ExitCode()
	}
	if e, ok := errors.AsType[*simExit](err); ok {
		return e.ExitCode()
	}
	return 1
}

// printError prints a command's error once (see errorText), the usage
// after an argument error, and why the connection closed under the
// command if the cluster refused it a subject.
func printError(w io.Writer, err error) {
	fmt.Fprintln(w, "atoll: "+errorText(err))
	if u, ok := errors.AsType[*usageErr](err); ok {
		fmt.Fprintln(w)
		fmt.Fprintln(w, u.usage)
	}
	if v := clusterclient.LastPermissionViolation(); v != nil && !errors.Is(err, v) {
		fmt.Fprintln(w, "atoll: "+errorText(v))
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "atoll",
		Short:         "atoll: a Ray-style distributed runtime for Go",
		SilenceUsage:  true,
		SilenceErrors: true, // main prints them (printError)
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageErr{err: errs.Invalidf("%s: %v", commandName(cmd), err), usage: strings.TrimRight(cmd.UsageString(), "\n")}
	})
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the atoll version",
		Args:  args(0),
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "atoll %s (%s)\n", version(), runtime.Version())
		},
	})
	root.AddCommand(newStartCmd(), newStopCmd(), newUpCmd(), newDownCmd(), newStatusCmd(), newListCmd(), newMemoryCmd(), newTimelineCmd())
	root.AddCommand(newAMMCmd(), newDrainCmd(), newReaderTokenCmd())
	root.AddCommand(newJobCmd(), newLogsCmd())
	root.AddCommand(newMicrobenchmarkCmd())
	root.AddCommand(newSimCmd()) // sim.go
	return root
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return s.Value[:12]
		}
	}
	return "dev"
}
