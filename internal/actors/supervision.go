package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// DecisionFunc is told about every decision of a restart-limit strategy:
// the failing child, the failure reason (the panic value), whether the child
// is restarted (false: it is stopped) and how many restarts the child has had
// over its whole life, including this one.
//
// It runs synchronously on the supervisor's goroutine (or, for actors spawned
// from the root context, on the failing child's goroutine): keep it cheap and
// never block in it; send an actor message if work is needed.
type DecisionFunc func(child *actor.PID, reason any, restarted bool, restarts int)

// Unlimited restarts, for NewRestartLimitStrategy.
const Unlimited = -1

// NewRestartLimitStrategy returns a supervisor strategy with Ray's
// max_restarts semantics: a failing child is restarted while it has been
// restarted fewer than maxRestarts times over its whole life (there is no
// time window, unlike actor.NewOneForOneStrategy), then stopped at the next
// failure. maxRestarts < 0 (Unlimited) restarts forever; 0 stops the child at
// its first failure. onDecision, if not nil, is called for every decision.
//
// The count lives in the child's actor.RestartStatistics, which protoactor
// keeps for the life of the child, so one strategy value serves any number
// of children and is safe for concurrent use. Each restart records one
// timestamp there (24 bytes), so an actor that fails forever under
// Unlimited grows by that much per failure.
//
// Install it with actor.WithSupervisor on the parent's props for children
// spawned by an actor, and with actor.WithGuardian on the child's own props
// for actors spawned from the root context (protoactor ignores WithSupervisor
// there and applies its default strategy).
func NewRestartLimitStrategy(maxRestarts int, onDecision DecisionFunc) actor.SupervisorStrategy {
	return &restartLimit{max: maxRestarts, onDecision: onDecision}
}

type restartLimit struct {
	max        int
	onDecision DecisionFunc
}

var _ actor.SupervisorStrategy = (*restartLimit)(nil)

// HandleFailure restarts or stops child; see NewRestartLimitStrategy.
func (s *restartLimit) HandleFailure(system *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, _ any) {
	restart := s.max < 0 || rs.FailureCount() < s.max
	directive := actor.StopDirective
	if restart {
		rs.Fail()
		directive = actor.RestartDirective
	}
	restarts := rs.FailureCount()
	system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: directive})
	if s.onDecision != nil {
		s.onDecision(child, reason, restart, restarts)
	}
	if restart {
		supervisor.RestartChildren(child)
	} else {
		supervisor.StopChildren(child)
	}
}

// RestartForever is the guardian of an actor spawned from the root context
// that handles input from the network (a node's gateway, the GCS, the
// AMM): whatever a message makes it fail with, it is restarted, never
// stopped, and the failure is logged with its reason. protoactor's default
// (10 failures within 10 s) would stop it for good while the node still
// reports itself alive.
func RestartForever(logger *slog.Logger, name string) actor.PropsOption {
	if logger == nil {
		logger = slog.Default()
	}
	return actor.WithGuardian(NewRestartLimitStrategy(Unlimited, func(_ *actor.PID, reason any, _ bool, restarts int) {
		logger.Error("actor failed; restarted", slog.String("actor", name), slog.Any("reason", reason), slog.Int("restarts", restarts))
	}))
}

// StopOnFailure is the guardian of an actor whose state lives in its
// instance, so that a restart would run on with amnesia (a raylet: its
// queues, workers and running tasks): on the first failure it is stopped,
// never restarted, the reason logged, and onStop called (on the
// supervisor's goroutine: it must not block) to fail the rest of the
// process over, as Ray's node dies with its raylet.
func StopOnFailure(logger *slog.Logger, name string, onStop func(reason any)) actor.PropsOption {
	if logger == nil {
		logger = slog.Default()
	}
	return actor.WithGuardian(NewRestartLimitStrategy(0, func(_ *actor.PID, reason any, _ bool, _ int) {
		logger.Error("actor failed; stopped (it cannot go on without its state)", slog.String("actor", name), slog.Any("reason", reason))
		if onStop != nil {
			onStop(reason)
		}
	}))
}
