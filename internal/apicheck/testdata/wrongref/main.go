package p

import (
	"context"

	"github.com/atoll-runtime/atoll"
)

var upper = atoll.NewFunc1("upper", func(_ context.Context, s string) (string, error) { return s, nil })

func use() {
	ctx := context.Background()
	ref, _ := atoll.Put(ctx, 7)
	upper.Remote(ctx, ref)
}
