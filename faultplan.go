package atoll

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// FaultLog is what a fault plan injected in this driver: the message
// faults of its node's injector (oldest first, at most
// actors.FaultLogCap) and the actions of its timed rules.
type FaultLog struct {
	Messages []actors.FaultEvent
	Timed    []faultplan.Event
}

// planRun is the running fault plan of a driver (WithFaultPlan).
type planRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	timed  []faultplan.Event
}

// maxTimedEvents bounds the timed events kept (a plan's rules fire
// MaxRules × their times).
const maxTimedEvents = 4096

// installFaultPlan installs the plan's message rules and rules at points
// in cfg (before the node starts).
func (cfg *config) installFaultPlan() {
	if cfg.faultPlan == nil {
		return
	}
	if cfg.faults == nil {
		cfg.faults = actors.NewFaultInjector()
	}
	cfg.faultPlan.Install(cfg.faults, faultplan.Driver)
	cfg.faultPoints = cfg.faultPlan.Points(faultplan.Driver, cfg.faults)
}

// startFaultPlan runs the plan's timed rules until stop.
func (rt *core) startFaultPlan() {
	p := rt.cfg.faultPlan
	if p == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &planRun{cancel: cancel, done: make(chan struct{})}
	rt.plan = run
	go func() {
		defer close(run.done)
		faultplan.Run(ctx, p, planTarget{rt}, func(e faultplan.Event) {
			rt.log.Warn("fault plan", "rule", e.Rule, "action", e.Action, "firing", e.Firing, "victim", e.Victim, "err", e.Err)
			run.mu.Lock()
			if len(run.timed) < maxTimedEvents {
				run.timed = append(run.timed, e)
			}
			run.mu.Unlock()
		})
	}()
}

// stop ends the timed rules and waits for them.
func (r *planRun) stop() {
	if r != nil {
		r.cancel()
		<-r.done
	}
}

// GetFaultLog returns what the fault injector of the driver's node
// (WithFaultInjector, WithFaultPlan) and the plan's timed rules injected
// so far. Node processes keep their own logs.
func GetFaultLog() (FaultLog, error) {
	rt, err := running()
	if err != nil {
		return FaultLog{}, err
	}
	var log FaultLog
	if rt.cfg.faults != nil {
		log.Messages = rt.cfg.faults.Log()
	}
	if r := rt.plan; r != nil {
		r.mu.Lock()
		log.Timed = slices.Clone(r.timed)
		r.mu.Unlock()
	}
	return log, nil
}

// planTarget is what a plan's timed rules act on.
type planTarget struct{ rt *core }

func (t planTarget) FailNextCreates(_ context.Context, n int) error { return t.rt.failNextCreates(n) }

func (t planTarget) KillNode(ctx context.Context, id string) error { return t.rt.killNode(ctx, id) }

func (t planTarget) PartitionNode(ctx context.Context, id string, dir faultplan.Direction, d time.Duration) error {
	return t.rt.partitionNode(ctx, id, dir, d)
}

func (t planTarget) KillableNodes(ctx context.Context) ([]string, error) {
	if t.rt.node == nil || t.rt.node.Gateway() == nil {
		return nil, nil
	}
	nodes, err := t.rt.node.GCS().ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		if n.State == atollpb.NodeState_NODE_ALIVE && !n.IsHead && !n.IsDriver {
			if id, err := ids.FromBytes(n.NodeId); err == nil {
				out = append(out, id.String())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
