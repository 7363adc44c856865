package faultplan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// EnvPlan names a plan file a node process loads at start (when its
// config carries no fault injector): its message rules for that node's
// role go into the node's actors.
const EnvPlan = "ATOLL_FAULT_PLAN"

// MaxRules bounds a plan's rules.
const MaxRules = 256

// Action is what a rule does.
type Action string

// The actions of a rule.
const (
	Drop        Action = "drop"
	Delay       Action = "delay"
	Duplicate   Action = "duplicate"
	FailCreates Action = "fail-creates"
	KillNode    Action = "kill-node"
	Partition   Action = "partition"
	// Actions at points of a node's work (see Points).
	KillWorker Action = "kill-worker"
	SpillFull  Action = "spill-full"
	SpillSlow  Action = "spill-slow"
)

// Timed reports whether the action runs at times (in the driver) rather
// than on messages.
func (a Action) Timed() bool { return a == FailCreates || a == KillNode || a == Partition }

// Direction is what a partition cuts, seen from the partitioned node.
type Direction string

// The directions of a partition. One-way cuts apply to gossip packets;
// TCP connections (NATS, object transfers) break both ways, as they do
// on a real network once retransmissions time out.
const (
	Both     Direction = "both"
	Inbound  Direction = "inbound"
	Outbound Direction = "outbound"
)

// MaxPartition bounds a partition's duration (the node heals by itself;
// nothing can reach it to heal it earlier).
const MaxPartition = 10 * time.Minute

// AtPoints reports whether the action acts at points of a node's work (a
// task about to run in a worker process, a spill write) rather than on
// messages or at times.
func (a Action) AtPoints() bool { return a == KillWorker || a == SpillFull || a == SpillSlow }

// Role is the role of the node a rule is installed on.
type Role string

// Node roles for Rule.Node.
const (
	All     Role = "all"
	Head    Role = "head"
	Driver  Role = "driver" // a driver's node, or an embedded single node
	Workers Role = "workers"
)

// includes reports whether a rule for nodes r is installed on a node of
// the given role.
func (r Role) includes(role Role) bool { return r == "" || r == All || r == role }

// Plan is a seeded list of rules.
type Plan struct {
	Seed  uint64 `yaml:"seed" json:"seed"`
	Rules []Rule `yaml:"rules" json:"rules"`
}

// Rule is one rule of a plan; see the package doc for the fields.
type Rule struct {
	Name        string   `yaml:"name,omitempty" json:"name,omitempty"`
	Action      Action   `yaml:"action" json:"action"`
	Message     string   `yaml:"message,omitempty" json:"message,omitempty"`
	Actor       string   `yaml:"actor,omitempty" json:"actor,omitempty"`
	Node        Role     `yaml:"node,omitempty" json:"node,omitempty"`
	Probability float64  `yaml:"probability,omitempty" json:"probability,omitempty"`
	Count       int      `yaml:"count,omitempty" json:"count,omitempty"`
	Delay       Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	At          Duration `yaml:"at,omitempty" json:"at,omitempty"`
	Every       Duration `yaml:"every,omitempty" json:"every,omitempty"`
	Times       int      `yaml:"times,omitempty" json:"times,omitempty"`
	// Point and Task are for kill-worker; For is how long a spill rule
	// or a partition lasts; Direction is a partition's (default both).
	Point     Point     `yaml:"point,omitempty" json:"point,omitempty"`
	Task      string    `yaml:"task,omitempty" json:"task,omitempty"`
	For       Duration  `yaml:"for,omitempty" json:"for,omitempty"`
	Direction Direction `yaml:"direction,omitempty" json:"direction,omitempty"`
}

// Duration is a time.Duration written as "20ms" in YAML.
type Duration time.Duration

// UnmarshalYAML reads "20ms", "2s", ...
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q: want a duration such as 20ms or 2s", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Parse reads and checks a YAML (or JSON) plan. A malformed plan, an
// unknown field or action, or a value out of range is ErrInvalidArgument.
func Parse(data []byte) (*Plan, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Plan
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return nil, errs.Invalidf("fault plan: %v", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Load reads and checks the plan in a file.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.Invalidf("fault plan: %v", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Validate checks every rule and fills in names ("action#i").
func (p *Plan) Validate() error {
	if len(p.Rules) > MaxRules {
		return errs.Invalidf("fault plan: %d rules, at most %d", len(p.Rules), MaxRules)
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		bad := func(format string, args ...any) error {
			return errs.Invalidf("fault plan: rule %d (%s): %s", i, r.Action, fmt.Sprintf(format, args...))
		}
		if err := r.validateAction(bad); err != nil {
			return err
		}
		switch r.Node {
		case "", All, Head, Driver, Workers:
		default:
			return bad("node %q: want all, head, driver or workers", r.Node)
		}
		if r.Probability < 0 || r.Probability > 1 || r.Probability != r.Probability {
			return bad("probability %v: want 0 to 1", r.Probability)
		}
		if r.Count < 0 {
			return bad("count %d: want >= 0 (0: no limit)", r.Count)
		}
		if r.Name == "" {
			r.Name = fmt.Sprintf("%s#%d", r.Action, i)
		}
	}
	return nil
}

// validateAction checks the fields that depend on the rule's action.
func (r *Rule) validateAction(bad func(format string, args ...any) error) error {
	pointsOnly := r.Point != "" || r.Task != "" || r.For != 0
	if r.Direction != "" && r.Action != Partition {
		return bad("direction is for the %s action", Partition)
	}
	switch r.Action {
	case Drop, Duplicate, Delay:
		if r.At != 0 || r.Every != 0 || r.Times != 0 {
			return bad("at, every and times are for timed actions (%s, %s, %s)", FailCreates, KillNode, Partition)
		}
		if (r.Action == Delay) != (r.Delay > 0) {
			return bad("delay is for the delay action, which needs a positive one")
		}
	case FailCreates, KillNode:
		if r.Message != "" || r.Actor != "" || r.Node != "" || r.Probability != 0 || r.Delay != 0 {
			return bad("message, actor, node, probability and delay are for message rules")
		}
		if r.At < 0 || r.Every < 0 || r.Times < 0 || (r.Times > 1 && r.Every == 0) {
			return bad("want at >= 0, every > 0 when times > 1")
		}
	case Partition:
		if r.Message != "" || r.Actor != "" || r.Node != "" || r.Probability != 0 || r.Delay != 0 || r.Point != "" || r.Task != "" {
			return bad("message, actor, node, probability, delay, point and task are not for partitions")
		}
		if r.At < 0 || r.Every < 0 || r.Times < 0 || (r.Times > 1 && r.Every == 0) {
			return bad("want at >= 0, every > 0 when times > 1")
		}
		if r.For <= 0 || time.Duration(r.For) > MaxPartition {
			return bad("for %v: a partition needs a duration above 0 and at most %v", time.Duration(r.For), MaxPartition)
		}
		switch r.Direction {
		case "":
			r.Direction = Both
		case Both, Inbound, Outbound:
		default:
			return bad("direction %q: want both, inbound or outbound", r.Direction)
		}
		return nil
	case KillWorker, SpillFull, SpillSlow:
		return r.validatePoints(bad)
	default:
		return bad("unknown action %q (want drop, delay, duplicate, fail-creates, kill-node, partition, kill-worker, spill-full or spill-slow)", r.Action)
	}
	if pointsOnly {
		return bad("point, task and for are for %s, %s, %s (and for for %s)", KillWorker, SpillFull, SpillSlow, Partition)
	}
	return nil
}

// validatePoints checks a rule at points.
func (r *Rule) validatePoints(bad func(format string, args ...any) error) error {
	if r.Message != "" || r.Actor != "" || r.Every != 0 || r.Times != 0 {
		return bad("message, actor, every and times are not for rules at points")
	}
	if r.Action == KillWorker {
		if r.Point != BeforeExecute && r.Point != AfterExecute {
			return bad("point %q: want %s or %s", r.Point, BeforeExecute, AfterExecute)
		}
		if r.Delay != 0 || r.At != 0 || r.For != 0 {
			return bad("delay, at and for are for %s and %s", SpillFull, SpillSlow)
		}
		return nil
	}
	if r.Point != "" || r.Task != "" {
		return bad("point and task are for %s (spill rules act on every spill write)", KillWorker)
	}
	if r.At < 0 || r.For < 0 {
		return bad("want at >= 0 and for >= 0")
	}
	if (r.Action == SpillSlow) != (r.Delay > 0) {
		return bad("delay is for %s, which needs a positive one", SpillSlow)
	}
	return nil
}

// rand returns rule i's generator: seeded from (plan seed, i).
func (p *Plan) rand(i int) *rand.Rand { return rand.New(rand.NewPCG(p.Seed, uint64(i)+1)) }

// Install adds the plan's message rules for a node of the given role to
// fi (Driver for an embedded node too).
func (p *Plan) Install(fi *actors.FaultInjector, role Role) {
	for i, r := range p.Rules {
		if r.Action.Timed() || r.Action.AtPoints() || !r.Node.includes(role) {
			continue
		}
		kind := map[Action]actors.FaultKind{Drop: actors.FaultDrop, Delay: actors.FaultDelay, Duplicate: actors.FaultDuplicate}[r.Action]
		count := r.Count
		if count == 0 {
			count = -1
		}
		fi.Add(actors.Rule{Name: r.Name, Kind: kind, Match: actors.MessageNamed(r.Message), Actor: r.Actor,
			Delay: time.Duration(r.Delay), Count: count, Probability: r.Probability, Rand: p.rand(i)})
	}
}

// Injector returns a fault injector with the plan's message rules for a
// node of the given role.
func (p *Plan) Injector(role Role) *actors.FaultInjector {
	fi := actors.NewFaultInjector()
	p.Install(fi, role)
	return fi
}
