package runtime

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

// startFaultPlan runs the plan's timed rules until stop.
func (d *Driver) startFaultPlan() {
	p := d.cfg.FaultPlan
	if p == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &planRun{cancel: cancel, done: make(chan struct{})}
	d.plan = run
	go func() {
		defer close(run.done)
		faultplan.Run(ctx, p, planTarget{d}, func(e faultplan.Event) {
			d.log.Warn("fault plan", "rule", e.Rule, "action", e.Action, "firing", e.Firing, "victim", e.Victim, "err", e.Err)
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

// Faults is the fault injector of the driver's node (atoll's
// WithFaultInjector, or a fault plan's), or nil.
func (d *Driver) Faults() *actors.FaultInjector { return d.cfg.Faults }

// FaultLog returns what the fault injector of the driver's node and its
// fault plan's timed rules injected so far.
func (d *Driver) FaultLog() (messages []actors.FaultEvent, timed []faultplan.Event) {
	if d.cfg.Faults != nil {
		messages = d.cfg.Faults.Log()
	}
	if r := d.plan; r != nil {
		r.mu.Lock()
		timed = slices.Clone(r.timed)
		r.mu.Unlock()
	}
	return messages, timed
}

// planTarget is what a plan's timed rules act on.
type planTarget struct{ d *Driver }

func (t planTarget) FailNextCreates(_ context.Context, n int) error { return t.d.FailNextCreates(n) }

func (t planTarget) KillNode(ctx context.Context, id string) error { return t.d.KillNode(ctx, id) }

func (t planTarget) PartitionNode(ctx context.Context, id string, dir faultplan.Direction, d time.Duration) error {
	return t.d.PartitionNode(ctx, id, dir, d)
}

func (t planTarget) KillableNodes(ctx context.Context) ([]string, error) {
	if t.d.gateway == nil {
		return nil, nil
	}
	nodes, err := t.d.node.GCS().ListNodes(ctx)
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
