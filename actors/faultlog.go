package actors

import (
	"fmt"
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

// faultLog is a ring of the latest FaultLogCap events.
type faultLog struct {
	seq    uint64
	events []FaultEvent
}

func (l *faultLog) add(e FaultEvent) {
	l.seq++
	e.Seq = l.seq
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
