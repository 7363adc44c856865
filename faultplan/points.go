package faultplan

import (
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/internal/actors"
)

// Point is a point of a node's work where a rule at points may act.
type Point string

// The points: a task attempt or actor call about to be sent to the worker
// process that runs it, or whose result just came back from it (before
// the raylet reports it); a spill file about to be written, a spill file
// about to be read back (a restore).
const (
	BeforeExecute Point = "before-execute"
	AfterExecute  Point = "after-execute"
	SpillWrite    Point = "spill-write"
	SpillRead     Point = "spill-read"
)

// SpanEvent names the OpenTelemetry span event of a worker killed at a
// point: it is added, with attributes atoll.fault.rule,
// atoll.fault.action and atoll.fault.point, to a span "fault <task>"
// started under the task's submit span (the raylet has no span of the
// task open when it kills).
const SpanEvent = "atoll.fault"

// Points are a plan's rules at points (kill-worker, spill-full,
// spill-slow) for one node. The raylet asks KillWorker at the two points
// of each task attempt and actor call it runs in a worker process; the
// object store's spiller calls BeforeWrite and BeforeRead around its
// file I/O (Points implements spill.Faults). Rules are tried in plan
// order and the first one that applies acts, so a point suffers at most
// one fault; rule i draws its probability from its own generator,
// seeded (seed, i), under the lock, so the same sequence of points gets
// the same decisions. Every fault is recorded in the node's fault log.
// A nil *Points injects nothing. Safe for concurrent use.
type Points struct {
	log   *actors.FaultInjector
	start time.Time
	sleep func(time.Duration)

	mu    sync.Mutex
	rules []*pointRule
}

type pointRule struct {
	Rule
	rng     *rand.Rand
	matched uint64
	fired   int
}

// Hit is one fault a rule at points injected.
type Hit struct {
	Rule   string
	Action Action
	Point  Point
	// Delay is how long a spill-slow rule delayed the I/O.
	Delay time.Duration
	// Event is the fault as the node's fault log recorded it.
	Event actors.FaultEvent
}

// Points returns the plan's rules at points for a node of the given role,
// recording their faults in log's fault log (the node's injector; a new
// one if nil), or nil if no such rule is for that role. Spill rules'
// at and for count from now.
func (p *Plan) Points(role Role, log *actors.FaultInjector) *Points {
	var rules []*pointRule
	for i, r := range p.Rules {
		if r.Action.AtPoints() && r.Node.includes(role) {
			pr := &pointRule{Rule: r}
			if r.Probability > 0 && r.Probability < 1 {
				pr.rng = p.rand(i)
			}
			rules = append(rules, pr)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	if log == nil {
		log = actors.NewFaultInjector()
	}
	return &Points{log: log, start: time.Now(), sleep: time.Sleep, rules: rules}
}

// KillWorker reports whether a kill-worker rule for point kills the
// worker process running the task whose function (or "Type.Method") or
// name is among names. The caller SIGKILLs the process.
func (p *Points) KillWorker(point Point, names ...string) (Hit, bool) {
	return p.decide(point, names)
}

// BeforeWrite is called before each spill file is written: a spill-slow
// rule sleeps its delay, a spill-full rule fails the write with a
// *DiskFullError (errors.Is(err, syscall.ENOSPC)).
func (p *Points) BeforeWrite() error {
	h, ok := p.decide(SpillWrite, nil)
	switch {
	case !ok:
	case h.Action == SpillSlow:
		p.sleep(h.Delay)
	case h.Action == SpillFull:
		return &DiskFullError{Rule: h.Rule}
	}
	return nil
}

// BeforeRead is called before each read of a spill file (a restore): a
// spill-slow rule sleeps its delay.
func (p *Points) BeforeRead() {
	if h, ok := p.decide(SpillRead, nil); ok {
		p.sleep(h.Delay)
	}
}

// DiskFullError is the failure of a spill write a spill-full rule
// injected: it matches syscall.ENOSPC, as a full disk's would.
type DiskFullError struct{ Rule string }

func (e *DiskFullError) Error() string {
	return "fault plan: rule " + e.Rule + ": no space left on device (injected)"
}

// Unwrap returns syscall.ENOSPC.
func (e *DiskFullError) Unwrap() error { return syscall.ENOSPC }

// kinds are the fault log's kinds of the actions at points.
var kinds = map[Action]actors.FaultKind{KillWorker: actors.FaultKillWorker, SpillFull: actors.FaultSpillFull, SpillSlow: actors.FaultSpillSlow}

func (p *Points) decide(point Point, names []string) (Hit, bool) {
	if p == nil {
		return Hit{}, false
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if !r.applies(point, names, now.Sub(p.start)) {
			continue
		}
		r.matched++
		if r.rng != nil && r.rng.Float64() >= r.Probability {
			continue
		}
		r.fired++
		task := ""
		if len(names) > 0 {
			task = names[0]
		}
		e := p.log.Record(actors.FaultEvent{Rule: r.Name, Match: r.matched, Kind: kinds[r.Action], Point: string(point), Task: task})
		return Hit{Rule: r.Name, Action: r.Action, Point: point, Delay: time.Duration(r.Delay), Event: e}, true
	}
	return Hit{}, false
}

// applies reports whether the rule acts on point (for a task among names)
// at elapsed since the node started, before its draw.
func (r *pointRule) applies(point Point, names []string, elapsed time.Duration) bool {
	if r.Count > 0 && r.fired >= r.Count {
		return false
	}
	switch r.Action {
	case KillWorker:
		return r.Point == point && (r.Task == "" || r.Task == "*" || slices.Contains(names, r.Task))
	case SpillFull:
		if point != SpillWrite {
			return false
		}
	case SpillSlow:
		if point != SpillWrite && point != SpillRead {
			return false
		}
	}
	at := time.Duration(r.At)
	return elapsed >= at && (r.For == 0 || elapsed < at+time.Duration(r.For))
}
