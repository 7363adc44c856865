package raylet

import (
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// TimelineCap is how many finished task attempts a raylet remembers for
// `atoll timeline` by default (Config.TimelineCap; the oldest are dropped
// first).
const TimelineCap = 4096

// TaskEvent is one finished task attempt on this node, or another span
// of work its timeline shows (Kind).
type TaskEvent struct {
	TaskID     ids.TaskID
	Name       string
	Worker     ids.WorkerID
	Start, End time.Time
	// Failed: the attempt ended with an error (its own, a crash, a
	// cancellation).
	Failed bool
	// Kind is what the event is (EventTask when empty): a task attempt,
	// an actor's creation or one of its calls, an object pulled from
	// another node, a spill write or a restore.
	Kind string
	// Bytes moved (transfers, spills, restores).
	Bytes uint64
	// Detail says more in a word or two (the object, the peer node).
	Detail string
	// Error and RemoteStack are why a failed attempt failed: its error's
	// message and the stack of the goroutine that failed in its worker,
	// each cut to maxEventError.
	Error, RemoteStack string
	// JobID is the task's job (zero if the spec named none) and TraceID
	// the trace of its submit span (zero when the driver did not trace).
	JobID   ids.JobID
	TraceID trace.TraceID
}

// finishedEvent is the timeline entry of an attempt that ended (Done).
func finishedEvent(a *Assignment) TaskEvent {
	e := TaskEvent{TaskID: a.task, Name: a.common().Name, Worker: a.worker, Start: a.started, End: a.ended, Failed: a.failed,
		Error: cut(a.err.GetMessage(), maxEventError), RemoteStack: cut(a.err.GetRemoteStack(), maxEventError)}
	e.JobID, _ = ids.FromBytes(a.common().GetJobId())
	e.TraceID = traceID(a.trace().GetTraceparent())
	return e
}

// maxEventError bounds the error message and the stack a timeline event
// keeps (the ring holds TimelineCap events).
const maxEventError = 2048

// cut returns s, cut to at most n bytes (on a rune boundary) with "…"
// added when it was longer.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// traceID reads the trace id of a W3C traceparent
// ("00-<trace id>-<span id>-<flags>"); zero if it is malformed.
func traceID(traceparent string) trace.TraceID {
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 {
		return trace.TraceID{}
	}
	id, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.TraceID{}
	}
	return id
}

// Kinds of timeline events.
const (
	EventTask          = "task"
	EventActorCreation = "actor_creation"
	EventActorCall     = "actor_call"
	EventTransfer      = "transfer"
	EventSpill         = "spill"
	EventRestore       = "restore"
)

// AddTimelineEvent adds an event to the raylet's timeline: the work the
// raylet does not run itself (actor calls in their hosts, transfers, the
// store's spills and restores) is reported to it this way.
type AddTimelineEvent struct{ Event TaskEvent }

// AddTimelineEvents adds a batch of events to the raylet's timeline (one
// message for a burst of actor calls answered). Recycle, if set, takes
// the batch back once the raylet has copied its events
// (EventBatch.Recycle).
type AddTimelineEvents struct {
	Events  []TaskEvent
	Recycle func([]TaskEvent)
}

// EventBatchSize is the number of timeline events a component gathers
// before it sends them to the raylet in one message.
const EventBatchSize = 256

// EventBatch gathers a component's timeline events for the raylet: Add
// reports when EventBatchSize wait, Take hands them over, and Recycle
// takes back a batch the raylet has applied, cleared, for the next
// batch to fill (a batch a task costs no slice growing). Its holder's
// lock guards it.
type EventBatch struct{ events, spare []TaskEvent }

// Add adds e and reports whether EventBatchSize events wait.
func (b *EventBatch) Add(e TaskEvent) (full bool) {
	if b.events == nil {
		if b.events, b.spare = b.spare, nil; b.events == nil {
			b.events = make([]TaskEvent, 0, EventBatchSize)
		}
	}
	b.events = append(b.events, e)
	return len(b.events) >= EventBatchSize
}

// Len is the number of events waiting.
func (b *EventBatch) Len() int { return len(b.events) }

// Take returns the events waiting (nil if none) and forgets them.
func (b *EventBatch) Take() []TaskEvent {
	events := b.events
	b.events = nil
	return events
}

// Recycle takes back events, a batch Take returned whose events the
// raylet has copied; no one may use it after.
func (b *EventBatch) Recycle(events []TaskEvent) {
	if cap(events) != EventBatchSize || b.spare != nil {
		return // grown past the size (crashes add past it), or one kept
	}
	clear(events)
	b.spare = events[:0]
}

// GetTimeline asks a raylet for the task attempts it ran recently, oldest
// first (the reply is a []TaskEvent).
type GetTimeline struct{}

// timeline is a ring of the last cap task events; observe, if set, sees
// each as it is added.
type timeline struct {
	cap     int
	events  []TaskEvent
	next    int
	observe func(TaskEvent)
}

func (tl *timeline) add(e TaskEvent) {
	if e.Kind == "" {
		e.Kind = EventTask
	}
	if tl.observe != nil {
		tl.observe(e)
	}
	if len(tl.events) < tl.cap {
		tl.events = append(tl.events, e)
		return
	}
	tl.events[tl.next] = e
	tl.next = (tl.next + 1) % tl.cap
}

// snapshot returns a copy of the events, oldest first.
func (tl *timeline) snapshot() []TaskEvent {
	out := make([]TaskEvent, 0, len(tl.events))
	out = append(out, tl.events[tl.next:]...)
	return append(out, tl.events[:tl.next]...)
}
