package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/microbench"
)

const microbenchmarkUsage = `Usage: atoll microbenchmark [-json] [-mode process|inprocess] [-filter REGEX] [-repeat N]
                            [-duration D] [-cpuprofile FILE]

Runs Ray's microbenchmarks (the metrics of 'ray microbenchmark', same names)
on atoll's embedded local cluster, each against a baseline measured in the
same run: goroutines and channels for tasks, raw protoactor requests for
actor calls, a mutex-guarded map for put and get calls, memcpy for put
gigabytes. Prints the median rate of the repetitions with min and max, and
the ratio atoll / baseline (higher is better). Progress goes to stderr.

Flags (one or two dashes):
  -json            one JSON line per metric (the format BENCHMARKS.md describes)
  -mode MODE       where tasks and actors run: process (worker processes,
                   the default) or inprocess (workers in this process)
  -filter REGEX    run only the metrics whose name matches REGEX
  -repeat N        timed repetitions of atoll and of the baseline (default %d)
  -duration D      least time of one repetition (default %v)
  -cpuprofile FILE write a CPU profile of the driver to FILE

Metrics: %s
`

func newMicrobenchmarkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "microbenchmark [-json] [-mode process|inprocess] [-filter REGEX] [-repeat N]",
		Short: "Run Ray's microbenchmarks, each against a baseline measured in the same run",
		Long:  usage(),
		// Go-style flags (-json, as the samples take): the standard flag
		// package parses them. In process mode the worker processes rerun
		// this command with the same arguments; microbench.Run then
		// serves tasks (atoll.Init) before anything is printed.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := parseMicrobenchmarkFlags(args)
			if errors.Is(err, flag.ErrHelp) {
				_, err := io.WriteString(cmd.OutOrStdout(), usage())
				return err
			}
			if err != nil {
				return err
			}
			return microbench.Run(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

func usage() string {
	return fmt.Sprintf(microbenchmarkUsage, microbench.DefaultRepeat, microbench.DefaultDuration, strings.Join(microbench.Names(), ", "))
}

// parseMicrobenchmarkFlags reads the command's flags; it prints nothing
// (errors are returned, -h gives flag.ErrHelp).
func parseMicrobenchmarkFlags(args []string) (microbench.Options, error) {
	opts := microbench.DefaultOptions()
	fs := flag.NewFlagSet("microbenchmark", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	mode := fs.String("mode", "process", "")
	filter := fs.String("filter", "", "")
	fs.BoolVar(&opts.JSON, "json", false, "")
	fs.IntVar(&opts.Repeat, "repeat", opts.Repeat, "")
	fs.DurationVar(&opts.Duration, "duration", opts.Duration, "")
	fs.StringVar(&opts.CPUProfile, "cpuprofile", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, err
		}
		return opts, fmt.Errorf("microbenchmark: %w (see atoll microbenchmark -h)", err)
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("microbenchmark: unexpected argument %q (flags only; see atoll microbenchmark -h)", fs.Arg(0))
	}
	m, err := atoll.ParseWorkerMode(*mode)
	if err != nil {
		return opts, fmt.Errorf("microbenchmark: -mode %q: want process or inprocess", *mode)
	}
	opts.Mode = m
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			return opts, fmt.Errorf("microbenchmark: -filter %q: %w", *filter, err)
		}
		opts.Filter = re
	}
	// -repeat, -duration and a -filter that matches nothing are checked
	// by microbench.Run, before it starts anything.
	return opts, nil
}
