package sim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/sim"
)

func TestMain(m *testing.M) { testmain.Run(m) }

var square = atoll.NewFunc1("sim_test.square", func(_ context.Context, x int) (int, error) { return x * x, nil })

func TestSmoke(t *testing.T) {
	res := sim.Run(sim.Config{Seed: 1, NoFaults: true}, func(ctx context.Context) error {
		v, err := atoll.Get(ctx, square.Remote(ctx, atoll.Value(7)))
		if err != nil {
			return err
		}
		if v != 49 {
			return fmt.Errorf("got %d", v)
		}
		return nil
	})
	report(t, res)
	t.Log(res)
}
