package actors

import (
	"fmt"
	"maps"
	"strings"

	"google.golang.org/protobuf/proto"
)

// FaultLogCap is how many fault events a FaultInjector keeps (the
// latest); Stats and FaultEvent.Seq still count every one.
const FaultLogCap = 4096

// FaultEvent is one fault a FaultInjector injected.
type FaultEvent struct {
	// Seq numbers the injector's faults from 1.
	Seq uint64
	// Rule is the rule's name; Match counts the messages it matched so
	// far (this one included), so a rule with a probability shows which
	// of its matches it faulted.
	Rule  string
	Match uint64
	Kind  FaultKind
	// Message is the message's type (a protobuf full name, else its Go
	// type); Actor the receiving actor's kind.
	Message string
	Actor   string
	// Point is where a fault at a point hit (before-execute,
	// after-execute, spill-write, spill-read; "" for message faults), and
	// Task the task or actor method it hit, if any.
	Point string
	Task  string
}

// String is "seq rule#match kind message@actor" for a message fault, "seq
// rule#match kind task@point" for a fault at a point.
func (e FaultEvent) String() string {
	if e.Point != "" {
		return fmt.Sprintf("%d %s#%d %s %s@%s", e.Seq, e.Rule, e.Match, e.Kind, e.Task, e.Point)
	}
	return fmt.Sprintf("%d %s#%d %s %s@%s", e.Seq, e.Rule, e.Match, e.Kind, e.Message, e.Actor)
}

// Record adds a fault injected elsewhere than on a message (a worker
// killed at a point, a spill write failed; package faultplan) to the
// injector's log and returns it numbered.
func (f *FaultInjector) Record(e FaultEvent) FaultEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.Recorded++
	f.log.add(e)
	e.Seq = f.log.seq
	return e
}

// MaxRuleCounts bounds the rule names a FaultInjector counts faults
// by; the faults of rules past it count under OtherRules.
const MaxRuleCounts = 1024

// OtherRules is the name the faults of rules past MaxRuleCounts count
// under.
const OtherRules = "(other rules)"

// faultLog is a ring of the latest FaultLogCap events, and every fault
// counted by rule.
type faultLog struct {
	seq    uint64
	events []FaultEvent
	byRule map[string]uint64
}

func (l *faultLog) add(e FaultEvent) {
	l.seq++
	e.Seq = l.seq
	if l.byRule == nil {
		l.byRule = map[string]uint64{}
	}
	if _, ok := l.byRule[e.Rule]; ok || len(l.byRule) < MaxRuleCounts {
		l.byRule[e.Rule]++
	} else {
		l.byRule[OtherRules]++
	}
	if len(l.events) < FaultLogCap {
		l.events = append(l.events, e)
		return
	}
	l.events[(l.seq-1)%FaultLogCap] = e
}

// ordered returns the events oldest first.
func (l *faultLog) ordered() []FaultEvent {
	out := make([]FaultEvent, 0, len(l.events))
	if len(l.events) < FaultLogCap {
		return append(out, l.events...)
	}
	start := l.seq % FaultLogCap
	out = append(out, l.events[start:]...)
	return append(out, l.events[:start]...)
}

// Log returns the faults injected so far (the latest FaultLogCap), oldest
// first.
func (f *FaultInjector) Log() []FaultEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log.ordered()
}

// FaultSnapshot is a page of a FaultInjector's log and its counts
// (FaultInjector.Snapshot).
type FaultSnapshot struct {
	// Events are the kept events numbered after the page's start, oldest
	// first; Lost counts those after it the ring no longer keeps; More:
	// events after the last one returned are left for the next page.
	Events []FaultEvent
	Lost   uint64
	More   bool
	// Total is the Seq of the latest fault (every fault ever); Stats and
	// ByRule count every fault by kind and by rule name.
	Total  uint64
	Stats  Stats
	ByRule map[string]uint64
}

// Snapshot returns at most limit (> 0) of the events numbered after
// after, oldest first, with the injector's counts: a reader that passes
// the last Seq it saw reads every event once, as long as it reads
// before FaultLogCap more faults happen (Lost counts those it missed).
func (f *FaultInjector) Snapshot(after uint64, limit int) FaultSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := FaultSnapshot{Total: f.log.seq, Stats: f.stats, ByRule: maps.Clone(f.log.byRule)}
	if after >= f.log.seq {
		return s
	}
	oldest := f.log.seq - uint64(len(f.log.events)) + 1 // Seq of the oldest kept
	if after+1 < oldest {
		s.Lost = oldest - after - 1
		after = oldest - 1
	}
	n := f.log.seq - after
	if limit > 0 && n > uint64(limit) {
		n, s.More = uint64(limit), true
	}
	s.Events = make([]FaultEvent, 0, n)
	for seq := after + 1; seq <= after+n; seq++ {
		s.Events = append(s.Events, f.log.events[(seq-1)%FaultLogCap])
	}
	return s
}

// ActorKind is the kind of the actor whose PID id is id: its first path
// segment ("raylet", "gcs", "owner", ...); a child's "$"-numbered
// segments are dropped.
func ActorKind(id string) string {
	kind, _, _ := strings.Cut(id, "/")
	return kind
}

// MessageName names a message's type in fault rules and logs: a protobuf
// message's full name (atoll.TaskResult), else its Go type (*raylet.x).
func MessageName(msg any) string {
	if m, ok := msg.(proto.Message); ok {
		return string(m.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("%T", msg)
}
