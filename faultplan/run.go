package faultplan

import (
	"context"
	"sync"
	"time"
)

// Target is what timed rules act on (the SDK implements it over the
// driver's runtime).
type Target interface {
	// FailNextCreates makes the driver's store fail its next n creations.
	FailNextCreates(ctx context.Context, n int) error
	// KillableNodes lists the live nodes a kill-node or partition rule
	// may pick (not the head, not a driver's), in a stable order.
	KillableNodes(ctx context.Context) ([]string, error)
	// KillNode kills a node as if its machine failed.
	KillNode(ctx context.Context, id string) error
	// PartitionNode cuts a node off the others in dir for d; it heals by
	// itself.
	PartitionNode(ctx context.Context, id string, dir Direction, d time.Duration) error
}

// Event is one action of a timed rule.
type Event struct {
	// Rule and Action name the rule; Firing counts its firings from 1.
	Rule   string
	Action Action
	Firing int
	// After is when it fired, since Run started.
	After time.Duration
	// Victim is the node killed (kill-node) or cut off (partition); ""
	// if there was none to pick. Err is why the action failed, if it did.
	Victim string
	Err    string
}

// Run runs the plan's timed rules against t until each has fired its
// times or ctx ends, calling record (from several goroutines, never at
// once) with each action. Victims are drawn from the rule's own seeded
// generator.
func Run(ctx context.Context, p *Plan, t Target, record func(Event)) {
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, r := range p.Rules {
		if !r.Action.Timed() {
			continue
		}
		rng := p.rand(i)
		wg.Go(func() {
			times := max(r.Times, 1)
			wait := time.Duration(r.At)
			for firing := 1; firing <= times; firing++ {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return
				case <-timer.C:
				}
				e := Event{Rule: r.Name, Action: r.Action, Firing: firing, After: time.Since(start)}
				var err error
				switch r.Action {
				case FailCreates:
					err = t.FailNextCreates(ctx, max(r.Count, 1))
				case KillNode, Partition:
					var nodes []string
					if nodes, err = t.KillableNodes(ctx); err == nil && len(nodes) > 0 {
						e.Victim = nodes[rng.IntN(len(nodes))]
						if r.Action == KillNode {
							err = t.KillNode(ctx, e.Victim)
						} else {
							err = t.PartitionNode(ctx, e.Victim, r.Direction, time.Duration(r.For))
						}
					}
				}
				if err != nil {
					e.Err = err.Error()
				}
				mu.Lock()
				record(e)
				mu.Unlock()
				wait = time.Duration(r.Every)
			}
		})
	}
	wg.Wait()
}
