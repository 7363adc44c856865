package raylet

import (
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// actorFailed reports a supervision decision about a crashed actor.
type actorFailed struct {
	id        ids.ActorID
	reason    any
	restarted bool
	restarts  int
}

// actorStrategy supervises the raylet's children: pool workers always
// restart; an actor host restarts at most its max_restarts over its whole
// life (-1: without limit), as Ray counts restarts, then stops.
type actorStrategy struct {
	mu     sync.Mutex
	raylet *actor.PID
	budget map[string]*restartBudget
}

type restartBudget struct {
	actor ids.ActorID
	max   int
	used  int
	// spent is the last failure once the budget ran out. It is recorded
	// here, synchronously, because the Terminated notice (a system
	// message) overtakes the actorFailed message in the raylet's mailbox.
	spent any
}

// spent returns the failure that exhausted pid's budget, if any.
func (s *actorStrategy) spent(pid string) (reason any, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.budget[pid]; b != nil && b.spent != nil {
		return b.spent, true
	}
	return nil, false
}

func newActorStrategy() *actorStrategy {
	return &actorStrategy{budget: map[string]*restartBudget{}}
}

func (s *actorStrategy) setRaylet(pid *actor.PID) {
	s.mu.Lock()
	s.raylet = pid
	s.mu.Unlock()
}

// add supervises the host pid of actor id within max restarts over the
// actor's life, used of them spent already (on other nodes).
func (s *actorStrategy) add(pid string, id ids.ActorID, max, used int) {
	s.mu.Lock()
	s.budget[pid] = &restartBudget{actor: id, max: max, used: used}
	s.mu.Unlock()
}

func (s *actorStrategy) remove(pid string) {
	s.mu.Lock()
	delete(s.budget, pid)
	s.mu.Unlock()
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *actorStrategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason any, _ any) {
	s.mu.Lock()
	b, raylet := s.budget[child.Id], s.raylet
	restart := b == nil || b.max < 0 || b.used < b.max
	var failed *actorFailed
	if b != nil {
		if restart {
			b.used++
		} else {
			b.spent = fmt.Sprint(reason)
		}
		failed = &actorFailed{id: b.actor, reason: reason, restarted: restart, restarts: b.used}
	}
	s.mu.Unlock()
	if failed != nil && raylet != nil {
		system.Root.Send(raylet, failed)
	}
	if restart {
		sup.RestartChildren(child)
	} else {
		sup.StopChildren(child)
	}
}
