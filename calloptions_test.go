package atoll_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// attemptLog is a file each attempt of a task or call appends a line to:
// it counts attempts across worker processes and actor restarts.
type attemptLog string

func (a attemptLog) add() (int, error) {
	f, err := os.OpenFile(string(a), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := f.WriteString("attempt\n"); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return a.count()
}

func (a attemptLog) count() (int, error) {
	b, err := os.ReadFile(string(a))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return bytes.Count(b, []byte("\n")), err
}

type flakyArgs struct {
	Attempts  attemptLog
	SucceedAt int // the attempt that succeeds; those before fail
}

type optsActor struct{ n int }

var (
	// optsFlaky fails until its SucceedAt-th attempt, which returns the
	// attempt's number.
	optsFlaky = atoll.NewFunc1("opts.flaky", func(_ context.Context, a flakyArgs) (int, error) {
		n, err := a.Attempts.add()
		if err != nil {
			return 0, err
		}
		if n < a.SucceedAt {
			return 0, fmt.Errorf("attempt %d fails", n)
		}
		return n, nil
	})
	optsActorType = atoll.NewActorType1("opts.actor", func(_ context.Context, n int) (*optsActor, error) {
		return &optsActor{n: n}, nil
	})
	optsValue = atoll.NewMethod0(optsActorType, "Value", func(a *optsActor, _ context.Context) (int, error) { return a.n, nil })
	optsPanic = atoll.NewMethod0(optsActorType, "Panic", func(*optsActor, context.Context) (int, error) {
		panic("opts.actor crashes on purpose")
	})
	optsFail = atoll.NewMethod1(optsActorType, "Fail", func(_ *optsActor, _ context.Context, msg string) (int, error) {
		return 0, errors.New(msg)
	})
	// optsPanicOnce panics (crashing the actor) on its first attempt and
	// returns the attempt's number on later ones.
	optsPanicOnce = atoll.NewMethod1(optsActorType, "PanicOnce", func(_ *optsActor, _ context.Context, a attemptLog) (int, error) {
		n, err := a.add()
		if err != nil {
			return 0, err
		}
		if n == 1 {
			panic("opts.actor crashes on its first attempt")
		}
		return n, nil
	})
)

// taskName returns the name a failed task's error carries, from the
// worker process that ran it.
func taskName(t *testing.T, err error) string {
	t.Helper()
	var te *atoll.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("want a TaskError, got %v", err)
	}
	return te.TaskName
}

func countOf(t *testing.T, a attemptLog) int {
	t.Helper()
	n, err := a.count()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Options bound on a function apply to each of its calls in worker
// processes; a call's own options override them; the function they were
// bound on is unchanged.
func TestTaskOptionsBoundAndOverridden(t *testing.T) {
	ctx := startProcesses(t, atoll.WithResources(map[string]float64{"GPU": 1}))
	dir := t.TempDir()
	file := func(name string) attemptLog { return attemptLog(filepath.Join(dir, name)) }

	bound := optsFlaky.Options(atoll.RetryExceptions(), atoll.MaxRetries(3), atoll.Name("opts.bound"))
	// Bound retries: attemptLog 1 and 2 fail, 3 succeeds.
	if v, err := atoll.Get(ctx, bound.Remote(ctx, atoll.Value(flakyArgs{file("bound"), 3}))); err != nil || v != 3 {
		t.Fatalf("bound RetryExceptions, MaxRetries(3): %v %v, want 3 <nil>", v, err)
	}
	// The call's options apply after the bound ones.
	_, err := atoll.Get(ctx, bound.Remote(ctx, atoll.Value(flakyArgs{file("override"), 3}), atoll.MaxRetries(0), atoll.Name("opts.call")))
	if name := taskName(t, err); name != "opts.call" {
		t.Errorf("a call's Name: the task ran as %q, want opts.call", name)
	}
	if n := countOf(t, file("override")); n != 1 {
		t.Errorf("a call's MaxRetries(0) over a bound MaxRetries(3): %d attemptLog, want 1", n)
	}
	// A bound name without a call's.
	_, err = atoll.Get(ctx, bound.Remote(ctx, atoll.Value(flakyArgs{file("name"), 5}), atoll.MaxRetries(0)))
	if name := taskName(t, err); name != "opts.bound" {
		t.Errorf("a bound Name: the task ran as %q, want opts.bound", name)
	}
	// Binding left the function itself alone: no retries, its own name.
	_, err = atoll.Get(ctx, optsFlaky.Remote(ctx, atoll.Value(flakyArgs{file("plain"), 3})))
	if name := taskName(t, err); name != "opts.flaky" {
		t.Errorf("the unbound function ran as %q, want opts.flaky", name)
	}
	if n := countOf(t, file("plain")); n != 1 {
		t.Errorf("the unbound function was tried %d times, want 1 (options bound on a copy leaked into it)", n)
	}

	// A retry count below -1 is refused before anything runs; a zero
	// option and a nil one set nothing.
	_, err = atoll.Get(ctx, optsFlaky.Remote(ctx, atoll.Value(flakyArgs{file("negative"), 1}), atoll.MaxRetries(-2)))
	if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "MaxRetries(-2)") {
		t.Errorf("MaxRetries(-2): %v, want ErrInvalidArgument naming it", err)
	}
	if n := countOf(t, file("negative")); n != 0 {
		t.Errorf("a task refused for MaxRetries(-2) ran %d times", n)
	}
	if v, err := atoll.Get(ctx, optsFlaky.Options(nil, atoll.TaskOrActorOption{}).Remote(ctx, atoll.Value(flakyArgs{file("zero"), 1}), atoll.TaskOption(nil))); err != nil || v != 1 {
		t.Errorf("zero and nil options: %v %v, want 1 <nil>", v, err)
	}

	// Resources: bound to more GPUs than the node has (infeasible, an
	// error at once), overridden by the call with what it has.
	tooBig := optsFlaky.Options(atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"GPU": 2}}))
	_, err = atoll.Get(ctx, tooBig.Remote(ctx, atoll.Value(flakyArgs{file("infeasible"), 1})))
	if !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("a task bound to 2 GPUs on a node with 1: %v, want ErrInvalidArgument (infeasible)", err)
	}
	fits := atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"GPU": 1}})
	if v, err := atoll.Get(ctx, tooBig.Remote(ctx, atoll.Value(flakyArgs{file("fits"), 1}), fits)); err != nil || v != 1 {
		t.Fatalf("a call's 1 GPU over a bound 2: %v %v, want 1 <nil>", v, err)
	}
}

// Options bound on an actor type apply to each actor New creates, New's
// own override them; options bound on a method apply to its calls.
func TestActorAndMethodOptionsBoundAndOverridden(t *testing.T) {
	ctx := startProcesses(t)
	dir := t.TempDir()

	restartable := optsActorType.Options(atoll.ActorName("opts.bound-actor"), atoll.MaxRestarts(1))
	h1, err := restartable.New(ctx, atoll.Value(1))
	if err != nil {
		t.Fatal(err)
	}
	// The bound MaxRestarts(1): the actor comes back after a crash.
	if _, err := atoll.Get(ctx, optsPanic.Remote(ctx, h1)); err == nil {
		t.Fatal("Panic returned no error")
	}
	if v, err := atoll.Get(ctx, optsValue.Remote(ctx, h1)); err != nil || v != 1 {
		t.Fatalf("after a crash with a bound MaxRestarts(1): %v %v, want 1 <nil>", v, err)
	}
	// The bound name finds it.
	found, err := atoll.GetActor[*optsActor](ctx, "opts.bound-actor")
	if err != nil || found.ID() != h1.ID() {
		t.Fatalf("GetActor(bound name): %v %v, want actor %s", found.ID(), err, h1.ID())
	}
	// New's ActorName overrides the bound one.
	h2, err := restartable.New(ctx, atoll.Value(2), atoll.ActorName("opts.call-actor"))
	if err != nil {
		t.Fatal(err)
	}
	if found, err := atoll.GetActor[*optsActor](ctx, "opts.call-actor"); err != nil || found.ID() != h2.ID() {
		t.Fatalf("GetActor(New's name): %v %v, want actor %s", found.ID(), err, h2.ID())
	}
	// The type itself is unchanged: no restarts.
	h3, err := optsActorType.New(ctx, atoll.Value(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, optsPanic.Remote(ctx, h3)); err == nil {
		t.Fatal("Panic returned no error")
	}
	if _, err := atoll.Get(ctx, optsValue.Remote(ctx, h3)); !errors.Is(err, atoll.ErrActorDied) {
		t.Fatalf("the unbound type's actor after a crash: %v, want ErrActorDied (options bound on a copy leaked into it)", err)
	}

	// A method's bound Name, overridden by a call's.
	named := optsFail.Options(atoll.Name("opts.m-bound"))
	_, err = atoll.Get(ctx, named.Remote(ctx, h2, atoll.Value("no")))
	if name := taskName(t, err); name != "opts.m-bound" {
		t.Errorf("a method's bound Name: the call ran as %q, want opts.m-bound", name)
	}
	_, err = atoll.Get(ctx, named.Remote(ctx, h2, atoll.Value("no"), atoll.Name("opts.m-call")))
	if name := taskName(t, err); name != "opts.m-call" {
		t.Errorf("a call's Name over a method's bound one: the call ran as %q, want opts.m-call", name)
	}
	_, err = atoll.Get(ctx, optsFail.Remote(ctx, h2, atoll.Value("no")))
	if name := taskName(t, err); name != "opts.actor.Fail" {
		t.Errorf("the unbound method's call ran as %q, want opts.actor.Fail", name)
	}

	// A call's MaxRetries replaces the actor's MaxTaskRetries (0 here):
	// the call that crashed the actor runs again on the restarted one.
	retried := attemptLog(filepath.Join(dir, "retried"))
	if v, err := atoll.Get(ctx, optsPanicOnce.Options(atoll.MaxRetries(1)).Remote(ctx, h2, atoll.Value(retried))); err != nil || v != 2 {
		t.Fatalf("a method call with MaxRetries(1) that crashed its actor once: %v %v, want 2 <nil>", v, err)
	}
	h4, err := restartable.New(ctx, atoll.Value(4), atoll.ActorName("opts.no-retry"))
	if err != nil {
		t.Fatal(err)
	}
	once := attemptLog(filepath.Join(dir, "once"))
	if _, err := atoll.Get(ctx, optsPanicOnce.Remote(ctx, h4, atoll.Value(once))); err == nil {
		t.Fatal("a call that crashed its actor, without retries, succeeded")
	}
	if n := countOf(t, once); n != 1 {
		t.Errorf("a call without retries ran %d times, want 1", n)
	}
}
