package main

import (
	"context"
	"maps"

	"github.com/atoll-runtime/atoll"
)

// Every workload task starts with noteRerun: an execution that is not
// its task's first attempt (atoll.CurrentAttempt > 0: a retry after a
// killed worker or node, or a rebuild of a lost output) tells the reruns
// actor, on the head, before doing anything else. The table's "task
// reruns" are those notes: the reruns that got as far as their first
// line (a rerun killed before it is not counted).

const rerunsName = "chaos-reruns"

// reruns counts reruns by function.
type reruns struct{ byFunc map[string]int }

var (
	rerunsType = atoll.NewActorType("chaos.reruns", func(context.Context) (*reruns, error) {
		return &reruns{byFunc: map[string]int{}}, nil
	})
	rerunsNote = atoll.NewMethod1(rerunsType, "Note", func(r *reruns, _ context.Context, fn string) (int, error) {
		r.byFunc[fn]++
		return r.byFunc[fn], nil
	})
	rerunsList = atoll.NewMethod0(rerunsType, "List", func(r *reruns, _ context.Context) (map[string]int, error) {
		return maps.Clone(r.byFunc), nil
	})
)

// noteRerun records the task under ctx with the reruns actor if this is
// not its first attempt.
func noteRerun(ctx context.Context, fn string) error {
	if atoll.CurrentAttempt(ctx) == 0 {
		return nil
	}
	h, err := atoll.GetActor[*reruns](ctx, rerunsName)
	if err != nil {
		return err
	}
	_, err = atoll.Get(ctx, rerunsNote.Remote(ctx, h, atoll.Value(fn)))
	return err
}

// newReruns creates the reruns actor on node.
func newReruns(ctx context.Context, node string) (atoll.ActorHandle[*reruns], error) {
	h, err := rerunsType.New(ctx, atoll.ActorName(rerunsName), atoll.OnNode(node, false))
	if err != nil {
		return h, err
	}
	_, err = atoll.Get(ctx, rerunsList.Remote(ctx, h)) // it answers
	return h, err
}
