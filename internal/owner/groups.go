package owner

import (
	"cmp"
	"slices"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// Groups of pending tasks (Config.Group): the tasks a shell wants listed
// together (a context's, to cancel once it is done), found without
// visiting every pending task.
//
// Nothing is indexed until TakeGroup is first called: a program that never
// lists a group pays nothing per task. From then on each new task is
// appended to its group's list, in submission order; a finished task
// stays in its list until the group is listed (TakeGroup takes the list)
// or the index is rebuilt from the pending tasks, once it holds more than
// twice as many entries as there are tasks pending (and 1,024), so the
// index is bounded by the pending tasks and its upkeep is O(1) amortized.

// groupSlack is the entries the group index may hold beyond twice the
// pending tasks before it is rebuilt.
const groupSlack = 1024

// TakeGroup lists the pending tasks of group g (Config.Group), in
// submission order, and forgets the group: a task submitted to it later
// starts it again (a context's watch fires once).
func (t *Table) TakeGroup(g any) []ids.TaskID {
	if t.cfg.Group == nil || g == nil {
		return nil
	}
	if t.groups == nil {
		t.indexGroups()
	}
	list := t.groups[g]
	delete(t.groups, g)
	t.groupEntries -= len(list)
	var out []ids.TaskID
	for _, tk := range list {
		if id := tk.id(); t.tasks[id] == tk {
			out = append(out, id)
		}
	}
	return out
}

// InSubmissionOrder returns the pending tasks among tasks, in submission
// order (a shell merging the tasks it tracked itself with TakeGroup's).
func (t *Table) InSubmissionOrder(tasks []ids.TaskID) []ids.TaskID {
	found := make([]*task, 0, len(tasks))
	for _, id := range tasks {
		if tk := t.tasks[id]; tk != nil {
			found = append(found, tk)
		}
	}
	slices.SortFunc(found, func(a, b *task) int { return cmp.Compare(a.seq, b.seq) })
	found = slices.Compact(found) // a task named twice
	out := make([]ids.TaskID, len(found))
	for i, tk := range found {
		out[i] = tk.id()
	}
	return out
}

// indexGroups (re)builds the group index from the pending tasks.
func (t *Table) indexGroups() {
	t.groups, t.groupEntries = map[any][]*task{}, 0
	for _, tk := range t.sortedTasks() {
		t.group(tk)
	}
}

// group adds a task just made pending to its group, once groups are
// indexed.
func (t *Table) group(tk *task) {
	if t.groups == nil || tk.attach == nil {
		return
	}
	g := t.cfg.Group(tk.attach)
	if g == nil {
		return
	}
	t.groups[g] = append(t.groups[g], tk)
	t.groupEntries++
	if t.groupEntries > 2*len(t.tasks)+groupSlack {
		t.indexGroups()
	}
}
