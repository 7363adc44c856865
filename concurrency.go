package atoll

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

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

// pendingCalls bounds a handle's calls in flight (MaxPendingCalls).
type pendingCalls chan struct{}

// acquire waits for room for one more call, or ctx's end.
func (p pendingCalls) acquire(ctx context.Context) error {
	select {
	case p <- struct{}{}:
		return nil
	default:
	}
	select {
	case p <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for room under the actor's MaxPendingCalls (%d): %w", cap(p), ctx.Err())
	}
}

func (p pendingCalls) release() { <-p }

// callGroups runs an actor's calls concurrently, in the process that
// hosts it: each concurrency group has its own limit and its own FIFO,
// so a full group never holds back the calls of another, and within a
// group calls start in the order they arrived (they may end in any
// order). An actor with no concurrency (MaxConcurrency 1, no groups)
// has none: its calls run one at a time on the task loop.
type callGroups struct {
	def      *callGroup
	byName   map[string]*callGroup
	byMethod map[string]*callGroup
}

// callGroup is one concurrency group: limit goroutines taking its calls.
type callGroup struct {
	calls chan pushed
}

// groupBuffer bounds the calls waiting in one group: more than the
// actor's host ever has in flight.
const groupBuffer = 1 << 12

// newCallGroups returns the groups of an actor created with spec, or nil
// if it runs one call at a time. run runs one call (on a group's
// goroutine).
func newCallGroups(spec *atollpb.ActorCreationSpec, run func(pushed)) *callGroups {
	if spec.GetMaxConcurrency() <= 1 && len(spec.GetConcurrencyGroups()) == 0 {
		return nil
	}
	g := &callGroups{def: newCallGroup(max(1, int(spec.GetMaxConcurrency())), run), byName: map[string]*callGroup{}, byMethod: map[string]*callGroup{}}
	for _, cg := range spec.GetConcurrencyGroups() {
		grp := newCallGroup(max(1, int(cg.GetMaxConcurrency())), run)
		g.byName[cg.GetName()] = grp
		for _, m := range cg.GetMethods() {
			g.byMethod[m] = grp
		}
	}
	return g
}

func newCallGroup(limit int, run func(pushed)) *callGroup {
	grp := &callGroup{calls: make(chan pushed, groupBuffer)}
	for range limit {
		go func() {
			for p := range grp.calls {
				run(p)
			}
		}()
	}
	return grp
}

// route hands a call to its group: the one the call names, else its
// method's, else the default group. A group the actor does not have is
// an error.
func (g *callGroups) route(p pushed) error {
	grp := g.def
	if name := p.spec.GetConcurrencyGroup(); name != "" {
		if grp = g.byName[name]; grp == nil {
			return errs.Invalidf("actor call %s: the actor has no concurrency group %q", p.spec.GetName(), name)
		}
	} else if _, method := splitMethod(p.spec.GetFunction()); g.byMethod[method] != nil {
		grp = g.byMethod[method]
	}
	grp.calls <- p
	return nil
}
