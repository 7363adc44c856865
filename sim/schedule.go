package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/faultplan"
)

// Schedules as text. A schedule is its faults' lines (Fault.String)
// joined by "; ", which ParseSchedule reads back: the form a replay
// command carries.

// FormatSchedule renders a schedule on one line.
func FormatSchedule(s []Fault) string {
	out := make([]string, len(s))
	for i, f := range s {
		out[i] = f.String()
	}
	return strings.Join(out, "; ")
}

// ParseSchedule reads a schedule FormatSchedule wrote ("" is none).
func ParseSchedule(text string) ([]Fault, error) {
	var out []Fault
	for _, part := range strings.Split(text, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := ParseFault(part)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if out == nil {
		out = []Fault{}
	}
	return out, nil
}

// ParseFault reads one fault's line (Fault.String).
func ParseFault(line string) (Fault, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return Fault{}, fmt.Errorf("sim: fault %q: want <at> <action> [key=value...]", line)
	}
	at, err := time.ParseDuration(fields[0])
	if err != nil {
		return Fault{}, fmt.Errorf("sim: fault %q: at: %v", line, err)
	}
	f := Fault{At: at, Action: fields[1]}
	if !slices.Contains(AllActions, f.Action) {
		return Fault{}, fmt.Errorf("sim: fault %q: unknown action %q (want one of %s)", line, f.Action, strings.Join(AllActions, ", "))
	}
	for _, kv := range fields[2:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "nodes":
			f.Nodes = strings.Split(v, ",")
		case "groups":
			for _, g := range strings.Split(v, "|") {
				f.Groups = append(f.Groups, strings.Split(g, ","))
			}
		case "for":
			f.For, err = time.ParseDuration(v)
		case "delay":
			f.Delay, err = time.ParseDuration(v)
		case "msg":
			var ok bool
			if f.Message, f.Actor, ok = strings.Cut(v, "@"); !ok {
				err = fmt.Errorf("want msg=<type>@<actor>")
			}
		case "p":
			f.Probability, err = strconv.ParseFloat(v, 64)
		case "count":
			f.Count, err = strconv.Atoi(v)
		case "point":
			f.Point = v
		case "keep-disk":
			f.KeepDisk = true
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return Fault{}, fmt.Errorf("sim: fault %q: %s: %v", line, kv, err)
		}
	}
	return f, nil
}

// FromPlan turns a fault plan (package faultplan, the format the chaos
// runs use) into a schedule for a cluster of nodes, n1 its head and the
// driver's node. Message rules last the whole run and apply on the nodes
// of their role; fail-creates fails creations in the driver's node's
// store; kill-node and partition pick their victims among the other
// nodes with the plan's seed (every/times repeat them); kill-worker,
// spill-full and spill-slow act on the nodes of their role.
func FromPlan(p *faultplan.Plan, nodes int) ([]Fault, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(p.Seed, 0x51a))
	role := func(rl faultplan.Role) []string {
		switch rl {
		case faultplan.Head, faultplan.Driver:
			return []string{nodeName(0)}
		case faultplan.Workers:
			var out []string
			for i := 1; i < nodes; i++ {
				out = append(out, nodeName(i))
			}
			return out
		}
		return nil
	}
	victim := func() string {
		if nodes < 2 {
			return ""
		}
		return nodeName(1 + r.IntN(nodes-1))
	}
	times := func(rule faultplan.Rule, f func(at time.Duration)) {
		n := max(rule.Times, 1)
		for i := 0; i < n; i++ {
			f(time.Duration(rule.At) + time.Duration(i)*time.Duration(rule.Every))
		}
	}
	var out []Fault
	for _, rule := range p.Rules {
		switch rule.Action {
		case faultplan.Drop, faultplan.Delay, faultplan.Duplicate:
			prob := rule.Probability
			if prob == 0 {
				prob = 1
			}
			msg := rule.Message
			if msg == "" {
				msg = "*"
			}
			if i := strings.LastIndex(msg, "."); i >= 0 {
				msg = msg[i+1:]
			}
			out = append(out, Fault{Action: string(rule.Action), Message: msg, Actor: rule.Actor, Probability: prob, Count: rule.Count,
				Delay: time.Duration(rule.Delay), Nodes: role(rule.Node)})
		case faultplan.FailCreates:
			times(rule, func(at time.Duration) {
				out = append(out, Fault{Action: actStoreFull, At: at, Nodes: []string{nodeName(0)}, Count: max(rule.Count, 1)})
			})
		case faultplan.KillNode:
			times(rule, func(at time.Duration) {
				if v := victim(); v != "" {
					out = append(out, Fault{Action: actCrash, At: at, Nodes: []string{v}})
				}
			})
		case faultplan.Partition:
			times(rule, func(at time.Duration) {
				v := victim()
				if v == "" {
					return
				}
				var rest []string
				for i := 0; i < nodes; i++ {
					if nodeName(i) != v {
						rest = append(rest, nodeName(i))
					}
				}
				switch rule.Direction {
				case faultplan.Inbound, faultplan.Outbound:
					for _, o := range rest {
						from, to := o, v
						if rule.Direction == faultplan.Outbound {
							from, to = v, o
						}
						out = append(out, Fault{Action: actCut, At: at, For: time.Duration(rule.For), Nodes: []string{from, to}})
					}
				default:
					out = append(out, Fault{Action: actPartition, At: at, For: time.Duration(rule.For), Groups: [][]string{{v}, rest}})
				}
			})
		case faultplan.KillWorker:
			prob := rule.Probability
			if prob == 0 {
				prob = 1
			}
			ns := role(rule.Node)
			if ns == nil {
				ns = []string{""}
			}
			for _, n := range ns {
				f := Fault{Action: actKillWorker, Point: string(rule.Point), Probability: prob, Count: rule.Count}
				if n != "" {
					f.Nodes = []string{n}
				}
				out = append(out, f)
			}
		case faultplan.SpillFull, faultplan.SpillSlow:
			d := time.Duration(rule.For)
			if d == 0 {
				d = 24 * time.Hour
			}
			ns := role(rule.Node)
			if ns == nil {
				for i := 0; i < nodes; i++ {
					ns = append(ns, nodeName(i))
				}
			}
			action := actDiskFull
			if rule.Action == faultplan.SpillSlow {
				action = actDiskSlow
			}
			out = append(out, Fault{Action: action, At: time.Duration(rule.At), For: d, Nodes: ns, Delay: time.Duration(rule.Delay)})
		}
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return int(a.At - b.At) })
	return out, nil
}
