package atoll

import (
	"encoding/hex"
	"slices"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Call options are typed by what they apply to, so that the compiler
// refuses an option where it means nothing:
//
//   - TaskOption: a call of a remote function (FuncN.Remote and the like);
//   - ActorOption: the creation of an actor (ActorType.New);
//   - MethodOption: one call of an actor's method (MethodN.Remote).
//
// Each option function returns a type that implements the interfaces of
// every kind it applies to: Name is a TaskOrMethodOption, good for a task
// and for a method call; ActorName is an ActorOnlyOption, and passing it
// to a task's Remote fails to compile with
//
//	atoll.ActorOnlyOption does not implement atoll.TaskOption (missing method AppliesToTasks)
//
// Options bound with a function's, method's or actor type's Options
// method apply first; a call's own options apply after them and so
// override them.

// TaskOption configures a task: a call of a remote function.
type TaskOption interface {
	// AppliesToTasks sets the option on a task's configuration. Only
	// atoll calls it; it is exported so that the compiler's message for
	// an option of another kind says what is missing.
	AppliesToTasks(*callConfig)
}

// ActorOption configures the creation of an actor (ActorType.New).
type ActorOption interface {
	// AppliesToActors sets the option on an actor's configuration (see
	// TaskOption.AppliesToTasks).
	AppliesToActors(*callConfig)
}

// MethodOption configures one call of an actor's method.
type MethodOption interface {
	// AppliesToMethods sets the option on an actor call's configuration
	// (see TaskOption.AppliesToTasks).
	AppliesToMethods(*callConfig)
}

// TaskOrActorOption applies to tasks and to actor creation: what the work
// needs and where it runs (WithTaskResources, Spread, OnNode).
type TaskOrActorOption struct{ set func(*callConfig) }

// AppliesToTasks implements TaskOption.
func (o TaskOrActorOption) AppliesToTasks(c *callConfig) { apply(o.set, c) }

// AppliesToActors implements ActorOption.
func (o TaskOrActorOption) AppliesToActors(c *callConfig) { apply(o.set, c) }

// TaskOrMethodOption applies to tasks and to actor calls: a call's name
// and retries (Name, MaxRetries, RetryExceptions).
type TaskOrMethodOption struct{ set func(*callConfig) }

// AppliesToTasks implements TaskOption.
func (o TaskOrMethodOption) AppliesToTasks(c *callConfig) { apply(o.set, c) }

// AppliesToMethods implements MethodOption.
func (o TaskOrMethodOption) AppliesToMethods(c *callConfig) { apply(o.set, c) }

// ActorOnlyOption applies to the creation of an actor only (ActorName,
// MaxRestarts, MaxTaskRetries, MaxConcurrency, ConcurrencyGroup,
// MaxPendingCalls).
type ActorOnlyOption struct{ set func(*callConfig) }

// AppliesToActors implements ActorOption.
func (o ActorOnlyOption) AppliesToActors(c *callConfig) { apply(o.set, c) }

// TaskOnlyOption applies to a task only (GeneratorBackpressure).
type TaskOnlyOption struct{ set func(*callConfig) }

// AppliesToTasks implements TaskOption.
func (o TaskOnlyOption) AppliesToTasks(c *callConfig) { apply(o.set, c) }

// MethodOnlyOption applies to an actor call only (InGroup).
type MethodOnlyOption struct{ set func(*callConfig) }

// AppliesToMethods implements MethodOption.
func (o MethodOnlyOption) AppliesToMethods(c *callConfig) { apply(o.set, c) }

// apply sets an option on c; the zero value of an option type sets
// nothing.
func apply(set func(*callConfig), c *callConfig) {
	if set != nil {
		set(c)
	}
}

// callConfig is one call's options once applied.
type callConfig struct {
	resources       *Resources
	maxRetries      int
	maxRetriesSet   bool // MaxRetries given: an actor call's own retries
	retryExceptions bool
	name            string
	actorName       string
	maxRestarts     int
	maxTaskRetries  int
	scheduling      *atollpb.SchedulingStrategy
	// Actor concurrency and backpressure (concurrency.go).
	maxConcurrency    int
	concurrencyGroups []*atollpb.ConcurrencyGroup
	maxPendingCalls   int
	group             string
	// genBackpressure: GeneratorBackpressure (genfunc.go); 0 the default.
	genBackpressure int
	// Lifetime and get-or-create of named actors (detached.go).
	detached    bool
	getIfExists bool
	// release frees the call's place under MaxPendingCalls once it ends.
	release func()
}

// taskConfig applies a task's bound options, then its call's.
func taskConfig(bound, opts []TaskOption) callConfig {
	return applyAll(callConfig{maxRetries: DefaultMaxRetries}, TaskOption.AppliesToTasks, bound, opts)
}

// applyAll applies the bound options, then the call's, to c with set.
func applyAll[O comparable](c callConfig, set func(O, *callConfig), bound, opts []O) callConfig {
	var none O
	for _, list := range [2][]O{bound, opts} {
		for _, o := range list {
			if o != none { // a nil interface in a slice of options
				set(o, &c)
			}
		}
	}
	return c
}

// checkRetries validates a task's or actor call's MaxRetries.
func checkRetries(c callConfig) error {
	if c.maxRetries < -1 {
		return errs.Invalidf("MaxRetries(%d): use -1 to retry forever, 0 for never, or a positive count", c.maxRetries)
	}
	return nil
}

// actorConfig applies an actor type's bound options, then New's.
func actorConfig(bound, opts []ActorOption) callConfig {
	return applyAll(callConfig{}, ActorOption.AppliesToActors, bound, opts)
}

// methodConfig applies a method's bound options, then its call's.
func methodConfig(bound, opts []MethodOption) callConfig {
	return applyAll(callConfig{}, MethodOption.AppliesToMethods, bound, opts)
}

// bind returns bound followed by more, sharing no backing array with
// either, so that options bound on one value never leak into another.
func bind[O any](bound, more []O) []O {
	return slices.Concat(bound, more)
}

// DefaultMaxRetries is how many times a task is retried when its worker
// dies (Ray's default).
const DefaultMaxRetries = 3

// WithTaskResources sets the resources a task or actor needs. Tasks
// default to {CPU: 1}; actors to nothing (an actor holds its resources for
// its whole life).
func WithTaskResources(r Resources) TaskOrActorOption {
	return TaskOrActorOption{func(c *callConfig) { c.resources = &r }}
}

// Spread places the task (or actor) round-robin over the nodes that can
// run it (Ray's "SPREAD" strategy).
func Spread() TaskOrActorOption {
	return TaskOrActorOption{func(c *callConfig) {
		c.scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_SPREAD}
	}}
}

// OnNode places the task (or actor) on the node with id nodeID (hex, as
// CurrentNodeID returns). With soft it falls back to the default placement
// if that node is gone or cannot run it; otherwise the call fails with an
// UnschedulableError (also when nodeID is not a node id at all).
func OnNode(nodeID string, soft bool) TaskOrActorOption {
	return TaskOrActorOption{func(c *callConfig) {
		b, _ := hex.DecodeString(nodeID)
		c.scheduling = &atollpb.SchedulingStrategy{Kind: atollpb.SchedulingStrategy_NODE_AFFINITY, NodeId: b, Soft: soft}
	}}
}

// MaxRetries sets how many times a task is retried after its worker dies
// (default 3; -1 retries forever; 0 never). On an actor call it replaces
// the actor's MaxTaskRetries for that call.
func MaxRetries(n int) TaskOrMethodOption {
	return TaskOrMethodOption{func(c *callConfig) { c.maxRetries, c.maxRetriesSet = n, true }}
}

// RetryExceptions makes a task (or actor call) also retry, within its
// retries, when its own code returns an error or panics.
func RetryExceptions() TaskOrMethodOption {
	return TaskOrMethodOption{func(c *callConfig) { c.retryExceptions = true }}
}

// Name sets the task's (or actor call's) name in traces, logs and errors
// (default: the registered function name).
func Name(name string) TaskOrMethodOption {
	return TaskOrMethodOption{func(c *callConfig) { c.name = name }}
}

// ActorName gives an actor a name unique in its namespace, so GetActor can
// find it.
func ActorName(name string) ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.actorName = name }}
}

// MaxRestarts sets how many times a crashed actor is restarted, its
// constructor run again (default 0; -1 without limit).
func MaxRestarts(n int) ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.maxRestarts = n }}
}

// MaxTaskRetries sets how many times an actor call that was running when
// the actor crashed is retried on the restarted actor (default 0). A
// call's MaxRetries overrides it for that call.
func MaxTaskRetries(n int) ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.maxTaskRetries = n }}
}
