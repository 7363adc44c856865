// The same calls with options of the right kinds compile: an option of
// several kinds is accepted by each.
package p

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

type counter struct{ n int }

var (
	square      = atoll.NewFunc1("square", func(_ context.Context, x int) (int, error) { return x * x, nil })
	counterType = atoll.NewActorType("counter", func(context.Context) (*counter, error) { return &counter{}, nil })
	get         = atoll.NewMethod0(counterType, "Get", func(c *counter, _ context.Context) (int, error) { return c.n, nil })
)

func use() {
	ctx := context.Background()
	ref, _ := atoll.Put(ctx, 7)
	square.Options(atoll.Spread(), atoll.Name("sq")).Remote(ctx, ref, atoll.MaxRetries(1), atoll.RetryExceptions(),
		atoll.WithTaskResources(atoll.Resources{CPU: 1}), atoll.OnNode(atoll.CurrentNodeID(), true))
	h, _ := counterType.Options(atoll.MaxRestarts(1), atoll.Spread()).New(ctx, atoll.ActorName("c"),
		atoll.WithTaskResources(atoll.Resources{CPU: 1}), atoll.MaxConcurrency(2), atoll.MaxPendingCalls(4))
	get.Options(atoll.Name("get")).Remote(ctx, h, atoll.MaxRetries(1), atoll.RetryExceptions(), atoll.InGroup("io"))
}
