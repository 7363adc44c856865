package sim

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/faultplan"
)

// Named is a workload with the checkers it comes with, for Main.
type Named struct {
	Name string
	Run  Workload
	// Checkers judge its history; Released: it releases every ref it
	// makes (Config.Released).
	Checkers []Checker
	Released bool
}

const mainUsage = `Usage: %s [-workload NAME] [-seeds N [-first S] [-parallel P] [-shrink] [-all]]
       %s [-workload NAME] -seed S [-schedule TEXT | -plan FILE] [-log FILE] [-spans FILE]

Runs a workload on a simulated cluster: N seeds from S in parallel (a
table of the failures, the totals, and for each failure the command that
replays it), or one seed (its verdict; -log writes its full event log,
-spans its OpenTelemetry spans as JSON lines; the same seed and schedule
replay the same run, with the same event log hash). Exit status 1 if a
run failed.

Flags:
  -workload NAME   the workload (%s; default %s)
  -seeds N         run N seeds (default 1 with -seed, else 100)
  -first S         the first seed (default 1)
  -seed S          run seed S alone
  -parallel P      runs at once (default the CPUs: %d)
  -nodes N         nodes in the cluster (default 5)
  -driver-node K   the node the driver runs on (default 1, the head; never crashed)
  -max-faults N    the most faults a seed draws (default 8); -no-faults: none
  -actions LIST    the fault actions a seed draws from (comma-separated; default all:
                   %s)
  -schedule TEXT   the run's faults instead of the seed's ("; "-separated, as printed)
  -plan FILE       the run's faults from a fault plan (package faultplan)
  -shrink          shrink each failing seed's schedule, print the smallest
  -all             print every seed's row, not only the failures
  -log FILE        one seed: write its event log to FILE ("-": stderr)
  -spans FILE      one seed: write its spans to FILE
  -json            one JSON line per run on stdout instead of the table
`

// Main is a simulator's command line over workloads (the first is the
// default): atoll sim is Main over the stock workloads; a program of yours
// can be Main over its own. It returns the exit status.
func Main(prog string, args []string, stdout, stderr io.Writer, workloads []Named) int {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var names []string
	for _, w := range workloads {
		names = append(names, w.Name)
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, mainUsage, prog, prog, strings.Join(names, ", "), names[0], runtime.NumCPU(), strings.Join(AllActions, ","))
	}
	name := fs.String("workload", names[0], "")
	seeds := fs.Int("seeds", 0, "")
	first := fs.Uint64("first", 1, "")
	seed := fs.Int64("seed", -1, "")
	parallel := fs.Int("parallel", runtime.NumCPU(), "")
	nodes := fs.Int("nodes", 5, "")
	driverNode := fs.Int("driver-node", 1, "")
	maxFaults := fs.Int("max-faults", 8, "")
	noFaults := fs.Bool("no-faults", false, "")
	actions := fs.String("actions", "", "")
	schedule := fs.String("schedule", "", "")
	planFile := fs.String("plan", "", "")
	shrink := fs.Bool("shrink", false, "")
	all := fs.Bool("all", false, "")
	logFile := fs.String("log", "", "")
	spansFile := fs.String("spans", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n\n", prog, err)
		usage(stderr)
		return 2
	}
	var w Named
	for _, x := range workloads {
		if x.Name == *name {
			w = x
		}
	}
	if w.Run == nil {
		fmt.Fprintf(stderr, "%s: no workload %q (want one of %s)\n", prog, *name, strings.Join(names, ", "))
		return 2
	}
	if *driverNode < 1 || *driverNode > *nodes {
		fmt.Fprintf(stderr, "%s: -driver-node %d: want 1 to %d (the nodes)\n", prog, *driverNode, *nodes)
		return 2
	}
	cfg := Config{Nodes: *nodes, DriverNode: *driverNode - 1, Checkers: w.Checkers, Released: w.Released, NoFaults: *noFaults,
		Faults: FaultConfig{Max: *maxFaults}}
	if *actions != "" {
		cfg.Faults.Actions = strings.Split(*actions, ",")
		for _, a := range cfg.Faults.Actions {
			if !containsString(AllActions, a) {
				fmt.Fprintf(stderr, "%s: unknown fault action %q\n", prog, a)
				return 2
			}
		}
	}
	given := false // the schedule is not the seed's own
	switch {
	case *schedule != "" && *planFile != "":
		fmt.Fprintf(stderr, "%s: -schedule and -plan: give one\n", prog)
		return 2
	case *schedule != "":
		s, err := ParseSchedule(*schedule)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return 2
		}
		cfg.Schedule, given = s, true
	case *planFile != "":
		p, err := faultplan.Load(*planFile)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return 2
		}
		s, err := FromPlan(p, cfg.Nodes)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return 2
		}
		cfg.Schedule, given = s, true
	}
	replay := fmt.Sprintf("%s -workload %s -nodes %d", prog, w.Name, cfg.Nodes)
	if cfg.DriverNode > 0 {
		replay += fmt.Sprintf(" -driver-node %d", cfg.DriverNode+1)
	}
	if *noFaults {
		replay += " -no-faults"
	} else if *maxFaults != 8 || *actions != "" {
		replay += fmt.Sprintf(" -max-faults %d", *maxFaults)
		if *actions != "" {
			replay += " -actions " + *actions
		}
	}
	if *seed >= 0 {
		return runOne(cfg, uint64(*seed), w, replay, given, *logFile, *spansFile, *asJSON, stdout, stderr)
	}
	if *seeds <= 0 {
		*seeds = 100
	}
	start := time.Now()
	fmt.Fprintf(stderr, "%s: workload %s, %d nodes, seeds %d..%d, %d at a time\n", prog, w.Name, cfg.Nodes, *first, *first+uint64(*seeds)-1, *parallel)
	done := 0
	results := Seeds(cfg, *first, *seeds, *parallel, w.Run, func(r *Result) {
		done++
		if *asJSON {
			_ = json.NewEncoder(stdout).Encode(jsonResult(r))
		}
		if r.Failure != nil {
			fmt.Fprintf(stderr, "seed %d FAILED: %s\n", r.Seed, r.Failure.Error())
		} else if done%100 == 0 {
			fmt.Fprintf(stderr, "%d/%d seeds\n", done, *seeds)
		}
	})
	wall := time.Since(start)
	failed := 0
	if !*asJSON {
		Table(stdout, results, *all)
		fmt.Fprintf(stdout, "faults: %s\n", FaultCounts(results))
		var simT time.Duration
		for _, r := range results {
			simT += r.SimTime
		}
		fmt.Fprintf(stdout, "wall time %v for %d seeds (%.1f seeds/s, %d at a time); simulated time %.0fx the wall time\n",
			wall.Round(time.Millisecond), len(results), float64(len(results))/wall.Seconds(), *parallel, simT.Seconds()/wall.Seconds())
	}
	for _, r := range results {
		if r.Failure == nil {
			continue
		}
		failed++
		fmt.Fprintf(stdout, "\nseed %d: %s\n  replay: %s\n", r.Seed, r.Failure.Error(), r.Replay(replay, !given))
		if *shrink {
			c := cfg
			c.Seed = r.Seed
			small := Shrink(c, r, w.Run, nil)
			fmt.Fprintf(stdout, "  shrunk to %d of %d faults: %s\n  replay: %s\n", len(small.Schedule), len(r.Schedule),
				FormatSchedule(small.Schedule), small.Replay(replay, false))
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func containsString(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// runOne runs one seed, with its event log and spans if asked.
func runOne(cfg Config, seed uint64, w Named, replay string, given bool, logFile, spansFile string, asJSON bool, stdout, stderr io.Writer) int {
	cfg.Seed = seed
	closeAll := func() {}
	open := func(path string) (io.Writer, error) {
		if path == "-" {
			return stderr, nil
		}
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		prev := closeAll
		closeAll = func() { prev(); _ = f.Close() }
		return f, nil
	}
	defer func() { closeAll() }()
	var err error
	if logFile != "" {
		if cfg.Log, err = open(logFile); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	if spansFile != "" {
		if cfg.Spans, err = open(spansFile); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	r := Run(cfg, w.Run)
	if asJSON {
		_ = json.NewEncoder(stdout).Encode(jsonResult(r))
	} else {
		fmt.Fprintln(stdout, r)
		fmt.Fprintf(stdout, "schedule: %s\n", FormatSchedule(r.Schedule))
		fmt.Fprintf(stdout, "stats: %+v\n", r.Stats)
		if r.WorkloadErr != nil {
			fmt.Fprintf(stdout, "the workload returned: %v\n", r.WorkloadErr)
		}
	}
	if r.Failure != nil {
		if !asJSON && logFile == "" {
			fmt.Fprintln(stdout, "last events:")
			for _, l := range r.Tail[max(0, len(r.Tail)-40):] {
				fmt.Fprintln(stdout, "  "+l)
			}
		}
		fmt.Fprintf(stdout, "replay: %s\n", r.Replay(replay, !given))
		return 1
	}
	return 0
}

type jsonRun struct {
	Seed     uint64  `json:"seed"`
	Faults   int     `json:"faults"`
	Schedule string  `json:"schedule"`
	Verdict  string  `json:"verdict"`
	Failure  string  `json:"failure,omitempty"`
	Events   uint64  `json:"events"`
	Hash     string  `json:"hash"`
	SimS     float64 `json:"sim_s"`
	WallS    float64 `json:"wall_s"`
	Stats    Stats   `json:"stats"`
}

func jsonResult(r *Result) jsonRun {
	j := jsonRun{Seed: r.Seed, Faults: len(r.Schedule), Schedule: FormatSchedule(r.Schedule), Verdict: "PASS", Events: r.Events,
		Hash: r.Hash, SimS: r.SimTime.Seconds(), WallS: r.Wall.Seconds(), Stats: r.Stats}
	if r.Failure != nil {
		j.Verdict, j.Failure = "FAIL "+r.Failure.Checker, r.Failure.Error()
	}
	return j
}
