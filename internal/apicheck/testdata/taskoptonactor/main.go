package p

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

type counter struct{ n int }

var counterType = atoll.NewActorType("counter", func(context.Context) (*counter, error) { return &counter{}, nil })

func use() {
	_, _ = counterType.New(context.Background(), atoll.RetryExceptions())
}
