package main

import (
	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/sim"
	"github.com/atoll-runtime/atoll/sim/workloads"
)

// newSimCmd is `atoll sim`: the deterministic simulator (package sim) over
// the stock workloads (package sim/workloads).
func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sim [-workload NAME] [-seeds N | -seed S] [flags]",
		Short: "Run a workload on a simulated cluster, many seeds in parallel or one replayed exactly",
		// Go-style flags, parsed by sim.Main.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := sim.Main("atoll sim", args, cmd.OutOrStdout(), cmd.ErrOrStderr(), workloads.All()); code != 0 {
				return &simExit{code: code}
			}
			return nil
		},
	}
}

// simExit is the status a failed or refused simulation exits with.
type simExit struct{ code int }

func (e *simExit) Error() string {
	if e.code == 1 {
		return "a simulated run failed (its replay command is above)"
	}
	return "bad arguments (see above)"
}

func (e *simExit) ExitCode() int { return e.code }
