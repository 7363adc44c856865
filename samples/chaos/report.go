package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// faultRow is one line of the fault table: a plan rule, or the driver's
// worker kills.
type faultRow struct {
	Rule, Kind, Target string
	// Driver counts the faults the driver's node injected (message rules)
	// or the rule's firings (timed rules); Nodes those the node processes
	// injected; Where what the faults hit.
	Driver, Nodes int
	Where         map[string]int
	Note          string
}

func (r faultRow) total() int { return r.Driver + r.Nodes }

// tallyFaults counts each rule's faults: the timed rules' actions in the
// driver's log, the message faults every node's injector reported to the
// polls (ft), the killer's kills.
func tallyFaults(p *faultplan.Plan, log atolltest.FaultLog, ft *faultTally, kills, killErrs int) ([]faultRow, []string) {
	var rows []faultRow
	for _, r := range p.Rules {
		row := faultRow{Rule: r.Name, Kind: string(r.Action), Target: ruleTarget(r), Where: map[string]int{}}
		if r.Action.Timed() {
			var victims, failed []string
			for _, e := range log.Timed {
				if e.Rule != r.Name {
					continue
				}
				row.Driver++
				switch {
				case e.Err != "":
					failed = append(failed, e.Err)
				case e.Victim != "":
					victims = append(victims, fmt.Sprintf("%s at %.1fs", short(e.Victim), e.After.Seconds()))
				}
			}
			if len(victims) > 0 {
				verb := "killed "
				if r.Action == faultplan.Partition {
					verb = "cut off "
				}
				row.Note = verb + strings.Join(victims, ", ")
			}
			if len(failed) > 0 {
				row.Note = strings.TrimPrefix(row.Note+"; failed: "+strings.Join(failed, "; "), "; ")
			}
		} else {
			row.Driver, row.Nodes, row.Where = ft.rule(r.Name)
		}
		rows = append(rows, row)
	}
	rows = append(rows, faultRow{Rule: killerRule, Kind: "kill-worker", Target: "KillTaskWorker on an unfinished workload task",
		Driver: kills, Note: map[bool]string{true: fmt.Sprintf("%d failed", killErrs)}[killErrs > 0]})
	return rows, []string{ft.note()}
}

// ruleTarget says what a rule acts on.
func ruleTarget(r faultplan.Rule) string {
	switch r.Action {
	case faultplan.FailCreates:
		return fmt.Sprintf("driver's store: next %d creation(s) fail", max(r.Count, 1))
	case faultplan.KillNode:
		return "a node, not the head nor the driver's"
	case faultplan.Partition:
		return fmt.Sprintf("a node cut off (%s) for %v, not the head nor the driver's", r.Direction, time.Duration(r.For))
	}
	var s string
	switch r.Action {
	case faultplan.KillWorker:
		s = "worker of " + cmp.Or(strings.Trim(r.Task, "*"), "any task") + " at " + string(r.Point)
	case faultplan.SpillFull:
		s = "store's spill writes fail (ENOSPC)"
	case faultplan.SpillSlow:
		s = "store's spill writes and restores"
	default:
		s = shortMessage(r.Message)
		if r.Actor != "" {
			s += "@" + r.Actor
		}
	}
	if r.Node != "" && r.Node != faultplan.All {
		s += " on " + string(r.Node)
	}
	if r.Probability > 0 && r.Probability < 1 {
		s += fmt.Sprintf(", p=%g", r.Probability)
	}
	if r.Delay > 0 {
		s += fmt.Sprintf(", +%v", time.Duration(r.Delay))
	}
	return s
}

// verdict is one checker's outcome.
type verdict struct {
	Name, What string
	Err        error // nil: PASS
}

// outcome is everything a run found.
type outcome struct {
	wall          time.Duration
	faults        []faultRow
	notes         []string
	sort          sortReport
	bank          bankReport
	hist          historyReport
	stores        storeReport
	reruns        map[string]int // by function (reruns.go)
	reconstructed uint64
	verdicts      []verdict
	// What the driver injected: its node's fault log and timed rules,
	// and the worker kills it requested (and how many failed).
	log             atolltest.FaultLog
	kills, killErrs int
}

func (o *outcome) passed() bool {
	return !slices.ContainsFunc(o.verdicts, func(v verdict) bool { return v.Err != nil })
}

// printTable writes the run's table.
func (o *outcome) printTable(w io.Writer, p *faultplan.Plan, opts options) {
	fmt.Fprintf(w, "chaos: plan %s, seed %d; %d nodes x %g CPU, %s stores; %.1fs\n\n", planName(opts.plan), p.Seed, opts.nodes, opts.cpus,
		benchfmt.FormatSize(int64(opts.store)), o.wall.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "faults injected\tkind\ttarget\tdriver\tnodes\ttotal\twhere / note")
	for _, r := range o.faults {
		var where []string
		for k, v := range r.Where {
			where = append(where, fmt.Sprintf("%s %d", k, v))
		}
		slices.Sort(where)
		if r.Note != "" {
			where = append(where, r.Note)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.Rule, r.Kind, r.Target, r.Driver, r.Nodes, r.total(), strings.Join(where, ", "))
	}
	_ = tw.Flush()
	for _, n := range o.notes {
		fmt.Fprintf(w, "  (%s)\n", n)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var byFunc []string
	for fn, n := range o.reruns {
		byFunc = append(byFunc, fmt.Sprintf("%s %d", strings.TrimPrefix(fn, "chaos."), n))
	}
	slices.Sort(byFunc)
	list := "none"
	if len(byFunc) > 0 {
		list = strings.Join(byFunc, ", ")
	}
	fmt.Fprintf(tw, "tasks retried\t%d\t(executions with attempt > 0, retries and rebuilds: %s; of them echo results delivered: %d, bank tasks: %d)\n",
		o.retried(), list, o.hist.Retried, o.bank.Retried)
	fmt.Fprintf(tw, "objects reconstructed\t%d\t(the driver's atolltest.Memory().Reconstructions)\n", o.reconstructed)
	fmt.Fprintf(tw, "payload puts refused\t%d\t(ObjectStoreFull from fail-creates, each put again)\n", o.hist.PutsRefused)
	fmt.Fprintf(tw, "spilled / restored\t%s / %s\t(the live nodes' stores over the run)\n", benchfmt.HumanSize(o.stores.Spilled), benchfmt.HumanSize(o.stores.Restored))
	fmt.Fprintf(tw, "results verified\t%d\t(sort: %d values in %d partitions of %s; echo tasks: %d results; bank: %d calls applied from %d callers in %d rounds)\n",
		o.resultsVerified(), o.sort.Count, o.sort.Partitions, benchfmt.FormatSize(o.sort.Bytes), o.hist.Delivered, o.bank.Applied, o.bank.Callers, o.bank.Rounds)
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checker\tverdict\twhat")
	for _, v := range o.verdicts {
		s := "PASS"
		if v.Err != nil {
			s = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, s, v.What)
	}
	_ = tw.Flush()
	for _, v := range o.verdicts {
		if v.Err != nil {
			fmt.Fprintf(w, "  %s: %v\n", v.Name, v.Err)
		}
	}
}

// retried counts the reruns noted.
func (o *outcome) retried() int {
	n := 0
	for _, v := range o.reruns {
		n += v
	}
	return n
}

// resultsVerified counts what the checkers verified: sorted values,
// echo results and applied bank calls, of the checks that passed.
func (o *outcome) resultsVerified() int64 {
	var n int64
	for _, v := range o.verdicts {
		if v.Err != nil {
			continue
		}
		switch v.Name {
		case "sort":
			n += o.sort.Count
		case "task-results":
			n += int64(o.hist.Delivered)
		case "bank-order":
			n += int64(o.bank.Applied)
		}
	}
	return n
}

// records are the run's figures as benchfmt records.
func (o *outcome) records(p *faultplan.Plan, opts options) []benchfmt.Record {
	config := map[string]any{
		"plan": planName(opts.plan), "seed": p.Seed, "nodes": opts.nodes, "cpus_per_node": opts.cpus,
		"store_bytes_per_node": int64(opts.store), "sort_bytes": int64(opts.sortSize), "partitions": opts.partitions,
		"duration": opts.duration.String(), "failure_timeout": opts.failureTimeout.String(), "kill_worker_every": opts.killEvery.String(),
		"atoll_version": benchfmt.Version(), "go": runtime.Version(), "cpus": runtime.NumCPU(),
	}
	rec := func(metric string, v float64, unit string) benchfmt.Record {
		return benchfmt.NewRecord("chaos", metric, v, unit, "", 0, config)
	}
	byKind := map[string]int{}
	var kinds []string
	for _, r := range o.faults {
		if _, ok := byKind[r.Kind]; !ok {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] += r.total()
	}
	var out []benchfmt.Record
	for _, k := range kinds {
		out = append(out, rec("faults_"+metricName(k), float64(byKind[k]), "faults"))
	}
	for _, r := range o.faults {
		if r.Rule != killerRule {
			out = append(out, rec("faults_rule_"+metricName(r.Rule), float64(r.total()), "faults").
				WithConfig(map[string]any{"kind": r.Kind, "target": r.Target, "driver": r.Driver, "nodes": r.Nodes}))
		}
	}
	out = append(out,
		rec("tasks_retried", float64(o.retried()), "tasks"),
		rec("objects_reconstructed", float64(o.reconstructed), "objects"),
		rec("payload_puts_refused", float64(o.hist.PutsRefused), "puts"),
		rec("spilled_bytes", float64(o.stores.Spilled), "bytes"),
		rec("restored_bytes", float64(o.stores.Restored), "bytes"),
		rec("results_verified", float64(o.resultsVerified()), "results").WithVerified(o.passed()),
		rec("wall_s", o.wall.Seconds(), "s").WithVerified(o.passed()),
	)
	for _, v := range o.verdicts {
		pass := 0.0
		if v.Err == nil {
			pass = 1
		}
		r := rec("checker_"+metricName(v.Name), pass, "pass").WithVerified(v.Err == nil)
		if v.Err != nil {
			r = r.WithConfig(map[string]any{"failure": v.Err.Error()})
		}
		out = append(out, r)
	}
	return out
}

// killerRule names the driver's worker kills in the fault table.
const killerRule = "(driver)"

// metricName makes a name fit a metric: lower case, "_" for the rest.
func metricName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '_'
	}, s)
}

func planName(file string) string {
	if file == "" {
		return "default"
	}
	return file
}
