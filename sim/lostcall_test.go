package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/sim"
)

type tally struct{ n int }

var (
	tallyType = atoll.NewActorType("sim_test.Tally", func(context.Context) (*tally, error) { return &tally{}, nil })
	tallyAdd  = atoll.NewMethod1(tallyType, "Add", func(c *tally, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
)

// TestLostCallsLocateTheActor: the first calls forwarded to actors on
// other nodes are lost on their way. Each fails FORWARD_LOST past the
// lease; its caller forgets the actor's address, asks the GCS where the
// actor is (it did not move) and sends the call there again: every call
// completes, once.
func TestLostCallsLocateTheActor(t *testing.T) {
	schedule, err := sim.ParseSchedule("0s drop for=1m msg=ForwardActorCall@gateway p=1 count=2")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res := sim.Run(sim.Config{Seed: 1, Nodes: 3, Schedule: schedule, Log: &log}, func(ctx context.Context) error {
		for i := range 3 {
			h, err := tallyType.New(ctx, atoll.Spread(), atoll.MaxTaskRetries(3))
			if err != nil {
				return err
			}
			for want := 1; want <= 2; want++ {
				n, err := atoll.Get(ctx, tallyAdd.Remote(ctx, h, atoll.Value(1)))
				if err != nil {
					return fmt.Errorf("actor %d, call %d: %w", i, want, err)
				}
				if n != want {
					return fmt.Errorf("actor %d, call %d: tally %d", i, want, n)
				}
			}
			if err := atoll.Kill(ctx, h); err != nil {
				return err
			}
		}
		return nil
	})
	report(t, res)
	if res.WorkloadErr != nil {
		t.Fatalf("workload: %v", res.WorkloadErr)
	}
	lost, located := strings.Count(log.String(), "FORWARD_LOST"), strings.Count(log.String(), "GcsRequest get-actor")
	if res.Stats.Dropped != 2 || lost != 2 || located != 2 {
		t.Fatalf("%d calls dropped, %d lost, %d lookups: want 2 of each (%v)", res.Stats.Dropped, lost, located, res.Stats)
	}
	t.Log(res, res.Stats)
}
