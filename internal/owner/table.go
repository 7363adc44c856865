package owner

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/compact"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/outbox"
	"github.com/atoll-runtime/atoll/internal/slab"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

// Config identifies the owning process.
type Config struct {
	// Worker is this process's id: the owner id of what it creates.
	Worker ids.WorkerID
	// Node is the node this process runs on.
	Node ids.NodeID
	// LineageBudget bounds the bytes of lineage kept (lineage.go);
	// default DefaultLineageBudget.
	LineageBudget int
	// NewCallerID names this process as a caller of an actor (one id per
	// actor entry, actors.go); default ids.NewWorkerID. A simulator
	// counts instead, so that a run replays.
	NewCallerID func() ids.WorkerID
	// Pack keeps a leasable task's spec packed (specpack) from its
	// dispatch on, in SendTask.Packed: a shell that submits them to a
	// raylet.Submitter, which takes packed specs, sets it.
	Pack bool
	// Group, when set, names the group a task's Attach puts it in (nil:
	// none), for TakeGroup (groups.go). It must give the same answer for
	// an attach every time.
	Group func(attach any) any
}

// Table is the ownership state of one process. See the package doc.
type Table struct {
	cfg     Config
	objects map[ids.ObjectID]*object
	tasks   map[ids.TaskID]*task
	actors  map[ids.ActorID]*actorEntry
	// restarts are the creations sent again to restart owned actors
	// whose nodes died, by task id, until answered.
	restarts map[ids.TaskID]ids.ActorID
	// gens are the streams of generator tasks (generators.go).
	gens map[ids.TaskID]*generator
	// droppedGens: streams dropped while their task runs, by task (the
	// items after those that arrived in order are freed at its end).
	droppedGens map[ids.TaskID]*droppedGen
	effects     []Effect
	// shapes are the recent kinds of task packed (Config.Pack).
	shapes specpack.Shapes
	// closed stops Free effects: the store is going away.
	closed bool

	created, freed uint64
	seqNext        uint64
	// briefTasks makes the records of tasks that keep no lineage and end
	// soon (briefTask), a run at a time.
	briefTasks slab.Of[task]
	// callEffects makes the CallActor effects.
	callEffects slab.Of[CallActor]
	// groups are the pending tasks by Config.Group, once TakeGroup was
	// first asked (groups.go); groupEntries counts their entries.
	groups       map[any][]*task
	groupEntries int

	// lineageOrder is the lineage of finished tasks whose returns live
	// (lineage.go), in the order it was recorded (for eviction; entries
	// forgotten since are skipped), and lineageN how many are not
	// forgotten. A return's record points at its task's entry: no table
	// by task id.
	lineageOrder []*lineageEntry
	lineageN     int
	// released are freed objects a kept lineage names as arguments.
	released                        map[ids.ObjectID]*object
	lineageBytes                    int
	lineageEvicted, reconstructions uint64

	// borrowers are the processes that reported holding objects this
	// process lent them (borrow.go), at most MaxBorrowers.
	borrowers      map[borrowerKey]*borrowerRecord
	borrowsRefused uint64
	// fromLender counts the entries each lender lent this process, so a
	// task's end finds in O(1) that it holds nothing of its owner's.
	fromLender map[ids.WorkerID]int
	// reportedTo are the lenders this process's last report to named
	// objects, and dirtyLenders how many of them are due a standalone
	// report (borrowreport.go).
	reportedTo   map[ids.WorkerID]*lenderReport
	dirtyLenders int
	// early holds the newest standalone report of each borrower the
	// owner had no record of, until that borrower's next in-result report
	// (which it may have overtaken) or its death; at most MaxEarlyReports,
	// oldest forgotten first (borrowreport.go). It holds no references.
	early      map[borrowerKey]*earlyReport
	earlyOrder []borrowerKey

	// marks are the high-water marks of the tables Compact copies.
	marks struct{ objects, tasks, released compact.Mark }
}

// New returns an empty Table.
func New(cfg Config) *Table {
	return &Table{cfg: cfg, objects: map[ids.ObjectID]*object{}, tasks: map[ids.TaskID]*task{}, actors: map[ids.ActorID]*actorEntry{},
		gens: map[ids.TaskID]*generator{}, droppedGens: map[ids.TaskID]*droppedGen{}, released: map[ids.ObjectID]*object{},
		borrowers: map[borrowerKey]*borrowerRecord{}, fromLender: map[ids.WorkerID]int{}, reportedTo: map[ids.WorkerID]*lenderReport{},
		early: map[borrowerKey]*earlyReport{}}
}

// TakeEffects returns the effects produced since the last call, in order,
// and forgets them.
func (t *Table) TakeEffects() []Effect {
	e := t.effects
	t.effects = nil
	return e
}

// AppendEffects appends the effects produced since the last call to dst,
// in order, forgets them, and returns dst: TakeEffects for a shell that
// queues them anyway, without a slice per step.
func (t *Table) AppendEffects(dst []Effect) []Effect {
	return outbox.Move(dst, &t.effects)
}

// HasEffects reports whether effects are waiting to be taken.
func (t *Table) HasEffects() bool { return len(t.effects) > 0 }

func (t *Table) emit(e Effect) { t.effects = append(t.effects, e) }

// Compact gives back the memory of tables that emptied out: a map that
// held a million tasks keeps their buckets after they finish unless it is
// copied (package compact). The shell calls it after each step, where
// nothing ranges over the tables.
func (t *Table) Compact() {
	t.objects = compact.Map(t.objects, &t.marks.objects)
	t.tasks = compact.Map(t.tasks, &t.marks.tasks)
	t.released = compact.Map(t.released, &t.marks.released)
	t.compactLineageOrder()
}

// Stats are the Table's sizes and lifetime counts.
type Stats struct {
	Objects, Tasks, Actors int
	// Generators: streams of generator tasks not dropped yet.
	Generators     int
	Created, Freed uint64
	// Lineage: tasks whose lineage is kept, and its bytes; evicted past
	// the budget; objects' tasks run again to rebuild them.
	Lineage, LineageBytes           int
	LineageEvicted, Reconstructions uint64
	// Released: freed objects kept (data freed) for a lineage.
	Released int
	// Borrowers: processes that reported holding objects lent to them;
	// BorrowedObjects: the references those reports hold;
	// BorrowsRefused: reports refused past MaxBorrowers.
	Borrowers, BorrowedObjects int
	BorrowsRefused             uint64
}

// Stats reports the Table's sizes.
func (t *Table) Stats() Stats {
	return Stats{Objects: len(t.objects), Tasks: len(t.tasks), Actors: len(t.actors), Generators: len(t.gens), Created: t.created, Freed: t.freed,
		Lineage: t.lineageN, LineageBytes: t.lineageBytes, LineageEvicted: t.lineageEvicted, Reconstructions: t.reconstructions,
		Released: len(t.released), Borrowers: len(t.borrowers), BorrowedObjects: t.borrowedObjects(), BorrowsRefused: t.borrowsRefused}
}

func (t *Table) borrowedObjects() int {
	n := 0
	for _, r := range t.borrowers {
		n += len(r.objects)
	}
	return n
}

// FailPending fails every pending task with err (the process's node was
// declared dead: nothing will answer them).
func (t *Table) FailPending(err *atollpb.ErrorInfo) {
	for _, tk := range t.sortedTasks() {
		t.finish(tk, err)
	}
}

// Close stops Free effects (the store is going away) and fails every
// pending task with err.
func (t *Table) Close(err *atollpb.ErrorInfo) {
	t.closed = true
	for _, tk := range t.sortedTasks() {
		t.finish(tk, err)
	}
}
