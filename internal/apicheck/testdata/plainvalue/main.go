package p

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

var square = atoll.NewFunc1("square", func(_ context.Context, x int) (int, error) { return x * x, nil })

func use() {
	square.Remote(context.Background(), 7)
}
