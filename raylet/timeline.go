package raylet

import (
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// TimelineCap is how many finished task attempts a raylet remembers for
// `atoll timeline` by default (Config.TimelineCap; the oldest are dropped
// first).
const TimelineCap = 4096

// TaskEvent is one finished task attempt on this node.
type TaskEvent struct {
	TaskID     ids.TaskID
	Name       string
	Worker     ids.WorkerID
	Start, End time.Time
	// Failed: the attempt ended with an error (its own, a crash, a
	// cancellation).
	Failed bool
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
