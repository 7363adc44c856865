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
	// retryOnly: the errors RetryExceptions was given (registered
	// sentinels, values of registered error types); retryErrors their
	// names, set by checkRetries.
	retryOnly      []error
	retryErrors    []string
	name           string
	actorName      string
	maxRestarts    int
	maxTaskRetries int
	scheduling     *atollpb.SchedulingStrategy
	// InPlacementGroup: the group and bundle, or why the option is bad.
	pgroup    *PlacementGroup
	pbundle   int
	pgroupErr error
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
	if len(bound) == 0 && len(opts) == 0 {
		return callConfig{maxRetries: DefaultMaxRetries} // no copy for the options to escape with
	}
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

// checkRetries validates a task's or actor call's MaxRetries and
// RetryExceptions, and names the errors RetryExceptions was given.
func checkRetries(c *callConfig) error {
	if c.maxRetries < -1 {
		return errs.Invalidf("MaxRetries(%d): use -1 to retry forever, 0 for never, or a positive count", c.maxRetries)
	}
	if len(c.retryOnly) == 0 {
		return nil
	}
	if len(c.retryOnly) > errs.MaxSentinels {
		return errs.Invalidf("RetryExceptions: %d errors, more than the %d an error can match on the wire", len(c.retryOnly), errs.MaxSentinels)
	}
	c.retryErrors = make([]string, len(c.retryOnly))
	for i, e := range c.retryOnly {
		name, ok := errs.RetryName(e)
		if !ok {
			return errs.Invalidf("RetryExceptions: %v (%T) is neither a registered sentinel error nor of a registered error type: register it with RegisterError in every process, so that a task's error is known to match it", e, e)
		}
		c.retryErrors[i] = name
	}
	return nil
}

// actorConfig applies an actor type's bound options, then New's.
func actorConfig(bound, opts []ActorOption) callConfig {
	return applyAll(callConfig{}, ActorOption.AppliesToActors, bound, opts)
}

// methodConfig applies a method's bound options, then its call's.
func methodConfig(bound, opts []MethodOption) callConfig {
	if len(bound) == 0 && len(opts) == 0 {
		return callConfig{} // no copy for the options to escape with
	}
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
//
// A worker process busy with tasks of a millisecond or more runs them on
// as many cores as their CPU resource, rounded up (GOMAXPROCS; at least
// one), and an actor's calls on as many as the actor's; shorter ones run
// on Go's default, and GOMAXPROCS set in the workers' environment is kept.
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

// MaxRetries sets how many times a task is retried after its worker or
// node dies, or after its node's object store could not take its output or
// an argument in time (default 3; -1 retries forever; 0 never). On an actor call it replaces
// the actor's MaxTaskRetries for that call.
func MaxRetries(n int) TaskOrMethodOption {
	return TaskOrMethodOption{func(c *callConfig) { c.maxRetries, c.maxRetriesSet = n, true }}
}

// RetryExceptions makes a task (or actor call) also retry, within its
// retries, when its own code returns an error or panics. Given errors, it
// retries only an error that matches one of them, in the process that ran
// the task, as Ray's retry_exceptions list does: a registered sentinel
// matches by errors.Is, and a value of a registered error type stands for
// its type (errors.As finds one); a panic matches none. Each must be
// registered (RegisterError) in every process; one that is not fails the
// call with ErrInvalidArgument.
func RetryExceptions(only ...error) TaskOrMethodOption {
	only = slices.Clone(only)
	return TaskOrMethodOption{func(c *callConfig) { c.retryExceptions, c.retryOnly = true, only }}
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

// MaxConcurrency lets an actor run up to n calls at once (Ray's threaded
// actors), on goroutines of its process: the actor's type must guard its
// own state. Calls from one caller start in the order they were made and
// may finish in any order. Default 1: one call at a time, in order. It
// applies to the actor's methods outside concurrency groups. An actor
// option (for ActorType.New); worker processes only: with goroutine
// workers (WithWorkerMode(InProcessWorkers)) New fails with
// ErrInvalidArgument.
func MaxConcurrency(n int) ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.maxConcurrency = n }}
}

// ConcurrencyGroup gives an actor a named group of methods with its own
// limit of calls running at once (Ray's concurrency groups): a slow
// method in one group does not hold back the methods of another. A
// method in no group runs in the default group, limited by
// MaxConcurrency. An actor option; repeat it for more groups.
func ConcurrencyGroup(name string, limit int, methods ...string) ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) {
		c.concurrencyGroups = append(c.concurrencyGroups, &atollpb.ConcurrencyGroup{Name: name, MaxConcurrency: int32(limit), Methods: methods})
	}}
}

// InGroup runs one actor call in the named concurrency group instead of
// its method's (Ray's .options(concurrency_group=...)). A call option;
// a group the actor does not have fails the call with ErrInvalidArgument.
func InGroup(name string) MethodOnlyOption {
	return MethodOnlyOption{func(c *callConfig) { c.group = name }}
}

// MaxPendingCalls bounds the calls this process may have pending on the
// actor (sent or waiting to be sent, not finished): a call past it waits
// in the method's Remote until one finishes or its context ends (Ray's
// max_pending_calls, which fails instead). An actor option for
// ActorType.New; it applies to the handle New returns and its copies.
// Default 0: no bound.
func MaxPendingCalls(n int) ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.maxPendingCalls = n }}
}

// validateConcurrency checks an actor's concurrency options.
func validateConcurrency(cc callConfig) error {
	if cc.maxConcurrency < 0 {
		return errs.Invalidf("MaxConcurrency(%d): must be at least 1", cc.maxConcurrency)
	}
	if cc.maxPendingCalls < 0 {
		return errs.Invalidf("MaxPendingCalls(%d): must be at least 0", cc.maxPendingCalls)
	}
	names, methods := map[string]bool{}, map[string]string{}
	for _, g := range cc.concurrencyGroups {
		switch {
		case g.Name == "":
			return errs.Invalidf("ConcurrencyGroup: empty name")
		case names[g.Name]:
			return errs.Invalidf("ConcurrencyGroup %q: declared twice", g.Name)
		case g.MaxConcurrency < 1:
			return errs.Invalidf("ConcurrencyGroup %q: limit %d, must be at least 1", g.Name, g.MaxConcurrency)
		}
		names[g.Name] = true
		for _, m := range g.Methods {
			if other, ok := methods[m]; ok {
				return errs.Invalidf("ConcurrencyGroup %q: method %s is in group %q already", g.Name, m, other)
			}
			methods[m] = g.Name
		}
	}
	return nil
}

// Detached makes an actor outlive the process that created it (Ray's
// lifetime="detached"): it is not killed when its creator shuts down or
// exits, nor when the creator's node leaves the cluster. Any driver or
// task finds it by name with GetActor, and only Kill (or the death of the
// node hosting it, or MaxRestarts running out) ends it. An actor option
// for ActorType.New; the actor must be named (ActorName), else New fails
// with ErrInvalidArgument.
//
// Detached matters for a driver connected to a cluster (WithAddress): the
// actor lives on the cluster's nodes, which outlive the driver. A driver
// running the embedded single-node cluster (Init with no address) hosts
// its actors in its own node, so a detached actor there still ends with
// the process: it is only kept alive across the creator's handles being
// dropped, as in a cluster. The constructor's arguments are read once, at
// creation; a detached actor restarted (MaxRestarts) after its creator is
// gone needs arguments that are values (atoll.Value), not refs the
// creator owned.
func Detached() ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.detached = true }}
}

// GetIfExists makes ActorType.New return the live actor of the same name
// if there is one, instead of failing because the name is taken (Ray's
// get_if_exists=True): get-or-create. The GCS's name registration
// decides, so of two callers creating the same name at once one creates
// the actor and the other gets a handle to it; the constructor runs
// once. The existing actor keeps its own options and constructor
// arguments (those given to this New are unused then). An actor option;
// the actor must be named (ActorName), else New fails with
// ErrInvalidArgument, and an existing actor of another type fails as
// GetActor does.
func GetIfExists() ActorOnlyOption {
	return ActorOnlyOption{func(c *callConfig) { c.getIfExists = true }}
}

// checkLifetime checks the options of detached.go for an actor creation.
func checkLifetime(cc callConfig) error {
	if cc.detached && cc.actorName == "" {
		return errs.Invalidf("Detached actor without a name: a detached actor outlives its creator and is found again only by name; add atoll.ActorName(...)")
	}
	if cc.getIfExists && cc.actorName == "" {
		return errs.Invalidf("GetIfExists without a name: only a named actor can exist already; add atoll.ActorName(...)")
	}
	return nil
}
