package workerproto

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/registry"
)

// callGroups runs an actor's calls concurrently, in the worker that
// hosts it (the worker's side of the host's windows, hostcore.go): each concurrency group has its own limit and its own FIFO,
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

// close ends the groups' goroutines once each finishes the call it runs
// (the worker ends: no call is routed any more).
func (g *callGroups) close() {
	close(g.def.calls)
	for _, grp := range g.byName {
		close(grp.calls)
	}
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
	} else if _, method := registry.SplitMethod(p.spec.GetFunction()); g.byMethod[method] != nil {
		grp = g.byMethod[method]
	}
	grp.calls <- p
	return nil
}
