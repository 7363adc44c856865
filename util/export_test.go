package util

import "context"

// WaitsInActor reports whether q's callers wait in its actor (a
// concurrent actor) rather than poll it.
func WaitsInActor[T any](ctx context.Context, q *Queue[T]) (bool, error) {
	_, info, err := q.resolve(ctx)
	return info.Concurrent, err
}
