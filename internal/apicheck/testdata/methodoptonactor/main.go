package p

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

type counter struct{ n int }

var counterType = atoll.NewActorType1("counter", func(_ context.Context, n int) (*counter, error) { return &counter{n}, nil })

func use() {
	_, _ = counterType.New(context.Background(), atoll.Value(1), atoll.InGroup("io"))
}
