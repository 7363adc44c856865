package raylet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// CPU is the name of the CPU resource.
const CPU = "CPU"

// Memory is the name of the memory resource, in bytes.
const Memory = "memory"

// Resources maps resource names to amounts.
type Resources map[string]float64

// Fits reports whether demand fits in avail. Resources absent from avail
// count as zero.
func (avail Resources) Fits(demand Resources) bool {
	for k, v := range demand {
		if v > 0 && avail[k] < v-1e-9 {
			return false
		}
	}
	return true
}

// Sub takes demand out of r (amounts may go negative).
func (r Resources) Sub(demand Resources) {
	for k, v := range demand {
		r[k] -= v
	}
}

// Add gives demand back to r.
func (r Resources) Add(demand Resources) {
	for k, v := range demand {
		r[k] += v
	}
}

// Clone copies r.
func (r Resources) Clone() Resources { return maps.Clone(r) }

// String renders r sorted by name, for logs and scenario tests.
func (r Resources) String() string {
	keys := slices.Sorted(maps.Keys(r))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%g", k, r[k]))
	}
	return strings.Join(parts, " ")
}

// Feasible reports whether demand could ever run on a node with total
// resources: otherwise the task must fail (or, in a cluster, go elsewhere).
func Feasible(total, demand Resources) bool { return total.Fits(demand) }

// PendingReason says why a queued task is not running.
type PendingReason string

// Pending reasons, recorded on queue spans.
const (
	PendingResources PendingReason = "waiting_for_resources"
	PendingWorker    PendingReason = "waiting_for_worker"
	PendingNone      PendingReason = ""
)

// Candidate is one scheduling class as the policy sees it: Count queued
// tasks with the same demand, oldest class first. Tasks of one class are
// interchangeable for placement, so when the first does not fit, none does
// (Ray's scheduling classes): a decision costs O(classes), not O(tasks).
type Candidate struct {
	Demand Resources
	// NoSlot marks actor creations, which get a worker of their own
	// instead of a slot of the pool.
	NoSlot bool
	// Count is how many tasks of the class are queued (at least 1).
	Count int
}

// Pick decides how many tasks of each class to dispatch now. Classes are
// served in order; within its class a task runs when its demand fits the
// available resources and a worker slot is free. A class that does not fit
// does not block smaller classes behind it. It returns the count to
// dispatch per class and, for classes with tasks left queued, the reason.
// avail is not modified.
func Pick(classes []Candidate, avail Resources, freeSlots int) (dispatch []int, reasons []PendingReason) {
	left := avail.Clone()
	dispatch = make([]int, len(classes))
	reasons = make([]PendingReason, len(classes))
	for i, c := range classes {
		for dispatch[i] < c.Count {
			if !left.Fits(c.Demand) {
				reasons[i] = PendingResources
				break
			}
			if freeSlots <= 0 && !c.NoSlot {
				reasons[i] = PendingWorker
				break
			}
			left.Sub(c.Demand)
			if !c.NoSlot {
				freeSlots--
			}
			dispatch[i]++
		}
	}
	return dispatch, reasons
}

// ClassKey names the scheduling class of a demand.
func ClassKey(demand Resources, noSlot bool) string {
	if noSlot {
		return "actor:" + demand.String()
	}
	return demand.String()
}

// IdleWorker is a worker waiting for work, as the reaping policy sees it.
type IdleWorker struct {
	ID    ids.WorkerID
	Since time.Time
}

// IdleToStop picks the workers to stop: those idle for longer than
// timeout, longest idle first, at most surplus of them (the pool never
// shrinks below its prestarted size).
func IdleToStop(now time.Time, idle []IdleWorker, surplus int, timeout time.Duration) []ids.WorkerID {
	if surplus <= 0 {
		return nil
	}
	sorted := slices.Clone(idle)
	slices.SortFunc(sorted, func(a, b IdleWorker) int { return a.Since.Compare(b.Since) })
	var out []ids.WorkerID
	for _, w := range sorted {
		if len(out) == surplus || now.Sub(w.Since) < timeout {
			break
		}
		out = append(out, w.ID)
	}
	return out
}
