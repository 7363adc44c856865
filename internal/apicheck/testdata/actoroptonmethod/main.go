package p

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

type counter struct{ n int }

var (
	counterType = atoll.NewActorType("counter", func(context.Context) (*counter, error) { return &counter{}, nil })
	get         = atoll.NewMethod0(counterType, "Get", func(c *counter, _ context.Context) (int, error) { return c.n, nil })
)

func use() {
	ctx := context.Background()
	h, _ := counterType.New(ctx)
	get.Remote(ctx, h, atoll.ActorName("c"))
}
