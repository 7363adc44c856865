package raylet

import (
	"maps"
	"math"
	"slices"
	"strconv"
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

// Times is how many copies of demand fit in avail at once, at most limit
// (a demand of nothing fits limit times).
func (avail Resources) Times(demand Resources, limit int) int {
	n := limit
	for k, v := range demand {
		if v > 0 {
			n = min(n, int(math.Max(0, math.Floor((avail[k]+1e-9)/v))))
		}
	}
	return max(n, 0)
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
		parts = append(parts, k+"="+formatQuantity(k, r[k]))
	}
	return strings.Join(parts, " ")
}

// formatQuantity renders a resource quantity: memory resources of 1 KiB
// or more as a size with a binary unit (memory=23.5GiB, not
// memory=2.527602688e+10), anything else as a plain number.
func formatQuantity(name string, v float64) string {
	if !strings.Contains(strings.ToLower(name), "memory") || v < 1024 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64) + units[u]
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[u]
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
	// PendingMemory: the arguments of running tasks already fill their
	// share of the object store (memory-aware admission).
	PendingMemory PendingReason = "waiting_for_memory"
	// PendingRootQueued: a root task (no object arguments) held back so
	// that workers are not flooded with new data while consumers wait
	// (Dask's root-task queuing).
	PendingRootQueued PendingReason = "root_task_queued"
	PendingNone       PendingReason = ""
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
	// Root marks tasks with no object dependencies.
	Root bool
	// Count is how many tasks of the class are queued (at least 1).
	Count int
	// Args are the object arguments of the first queued tasks, in queue
	// order (at most as many as could start; tasks past the end have
	// none).
	Args [][]ArgObject
}

// ArgObject is an object a task reads, and its size.
type ArgObject struct {
	ID   ids.ObjectID
	Size uint64
}

// Limits bound what may start besides resources.
type Limits struct {
	// FreeSlots is how many pool workers can take a task.
	FreeSlots int
	// RootSlots is how many more root tasks may start; negative: no limit.
	RootSlots int
	// Held are the objects running tasks read (each counted once however
	// many tasks read it: they share its memory) and ArgsHeld their bytes;
	// ArgsCap is the most they may hold (a share of the object store); 0:
	// no limit. A task whose arguments alone exceed the cap still runs when
	// nothing else holds arguments, or it could never run.
	Held              func(ids.ObjectID) bool
	ArgsHeld, ArgsCap uint64
}

// Pick decides how many tasks of each class to dispatch now. Classes of
// tasks that consume objects go first, in arrival order — finishing work
// on data already produced frees memory — then root classes within
// RootSlots. Within its class a task runs when its demand fits the
// available resources, a worker slot is free and its arguments fit the
// budget. A class that cannot run does not block the others. It returns
// the count to dispatch per class and, for classes with tasks left
// queued, the reason. avail is not modified.
func Pick(classes []Candidate, avail Resources, lim Limits) (dispatch []int, reasons []PendingReason) {
	left := avail.Clone()
	dispatch = make([]int, len(classes))
	reasons = make([]PendingReason, len(classes))
	added := map[ids.ObjectID]bool{} // objects the tasks picked here read
	newBytes := func(args []ArgObject) uint64 {
		var n uint64
		for _, a := range args {
			if (lim.Held == nil || !lim.Held(a.ID)) && !added[a.ID] {
				n += a.Size
			}
		}
		return n
	}
	for _, roots := range []bool{false, true} {
		for i, c := range classes {
			if c.Root != roots {
				continue
			}
			for dispatch[i] < c.Count {
				var args []ArgObject
				if dispatch[i] < len(c.Args) {
					args = c.Args[dispatch[i]]
				}
				more := newBytes(args)
				if r := lim.blocks(c, left, more); r != PendingNone {
					reasons[i] = r
					break
				}
				left.Sub(c.Demand)
				if !c.NoSlot {
					lim.FreeSlots--
				}
				if c.Root && lim.RootSlots > 0 {
					lim.RootSlots--
				}
				for _, a := range args {
					added[a.ID] = true
				}
				lim.ArgsHeld += more
				dispatch[i]++
			}
		}
	}
	return dispatch, reasons
}

// blocks says why the next task of c cannot start, or PendingNone.
func (lim *Limits) blocks(c Candidate, left Resources, args uint64) PendingReason {
	switch {
	case !left.Fits(c.Demand):
		return PendingResources
	case lim.FreeSlots <= 0 && !c.NoSlot:
		return PendingWorker
	case c.Root && lim.RootSlots == 0:
		return PendingRootQueued
	case lim.ArgsCap > 0 && args > 0 && lim.ArgsHeld > 0 && lim.ArgsHeld+args > lim.ArgsCap:
		return PendingMemory
	}
	return PendingNone
}

// ClassKey names the scheduling class of a demand.
func ClassKey(demand Resources, noSlot, root bool) string {
	switch {
	case noSlot:
		return "actor:" + demand.String()
	case root:
		return "root:" + demand.String()
	}
	return demand.String()
}

// RootSlots is how many root tasks may run at once: saturation times the
// node's worker slots, at least one (Dask's worker-saturation); +Inf
// disables the limit (-1).
func RootSlots(saturation float64, slots int) int {
	if math.IsInf(saturation, 1) || saturation <= 0 {
		return -1
	}
	return max(1, int(math.Ceil(saturation*float64(slots))))
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
