package owner

import "github.com/atoll-runtime/atoll/atollpb"

// A task's records where their lifetimes allow, in one allocation: the
// owner's table takes storage from its caller (SubmitRecordsIn) for a
// task's record with its first return's, or for the return's alone, so
// that the caller can keep a record of its own for the return in the
// same allocation.

// taskWithReturn is a task's record with its first return's: what most
// tasks are, in one allocation (208 bytes, a size class) rather than two.
// The two records' lifetimes are near one: a finished task's record is
// its return's lineage, kept while the return is referenced, and its
// return is referenced by the caller from submission on. So it is used
// for tasks that keep lineage (retried plain tasks, the default), not for
// actor calls or tasks submitted without retries, whose records part at
// the task's end.
type taskWithReturn struct {
	task task
	ret  object
}

// TaskSpace is room for a task's records (its own and its first
// return's) inside an allocation of the caller's: a submitter that keeps
// a record of its own for the task's return ref, for as long as the
// return's record lives, saves an allocation a task by holding both in
// one. Only a submission InSpace reports true for goes there.
type TaskSpace struct{ b taskWithReturn }

// InSpace reports whether s's records go in one allocation: a TaskSpace
// given to SubmitRecordsIn, else one of the table's.
func InSpace(s Submission) bool {
	return s.Spec.NumReturns > 0 && s.Spec.MaxRetries != 0 && s.Actor.IsZero() && !s.Spec.Generator &&
		s.Spec.Type == atollpb.TaskType_NORMAL_TASK
}

// ObjectSpace is room for an object's record inside an allocation of the
// caller's: the state of the caller's reference to the object, which
// points at the record for as long as it lives anyway.
type ObjectSpace struct{ o object }

// newTask makes the record of a task submitted with s that InSpace
// leaves out. An actor call's, or a plain task's without retries, keeps
// no lineage and goes when its task ends (recordLineage), as the calls
// and tasks submitted about when it was do: those come from runs of
// records (package slab). A generator's lives as long as its stream and
// an actor creation's until its actor is up, so each is its own.
func (t *Table) newTask(s Submission) *task {
	if s.Spec.Generator || (s.Spec.Type != atollpb.TaskType_ACTOR_TASK && s.Spec.Type != atollpb.TaskType_NORMAL_TASK) {
		return new(task)
	}
	return t.briefTasks.New()
}
