package workerproc

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Processes runs workers and actor hosts as processes
// (raylet.ProcessWorkers).
type Processes struct{}

var _ raylet.ProcessWorkers = Processes{}

// New returns the process workers a raylet in process mode uses.
func New() Processes { return Processes{} }

// TaskWorker implements raylet.ProcessWorkers.
func (Processes) TaskWorker(w raylet.WorkerSpec) actor.Producer {
	return func() actor.Actor {
		return &taskWorker{id: w.Worker.ID, node: w.Worker.NodeID, cfg: w.Config, raylet: w.Raylet, slot: w.Slot,
			proxy: proxy{id: w.Worker.ID, node: w.Worker.NodeID, cfg: w.Config, raylet: w.Raylet}}
	}
}

// ActorHost implements raylet.ProcessWorkers. The host's queue and
// process generation (hostState) outlive the actor's restarts: the
// producer runs again on each restart, the state is made once here.
func (Processes) ActorHost(h raylet.HostSpec) actor.Producer {
	state := &hostState{}
	groups, concurrent := newHostGroups(h.Spec.GetActorCreation(), h.PipelineDepth)
	return func() actor.Actor {
		return &actorHost{id: h.Actor, spec: h.Spec, worker: h.Worker, cfg: h.Config, raylet: h.Raylet, deliver: h.Deliver,
			proxy: proxy{id: h.Worker.ID, actor: h.Actor, node: h.Worker.NodeID, cfg: h.Config, raylet: h.Raylet}, state: state,
			groups: groups, concurrent: concurrent}
	}
}
