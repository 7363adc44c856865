package atoll

// Actor methods of zero to six arguments (Method0.., MultiMethod0..) are
// generated: zz_generated_methods.go.

import (
	"github.com/atoll-runtime/atoll/internal/errs"
)

func instanceOf[T any](instance any) (T, error) {
	t, ok := instance.(T)
	if !ok {
		var zero T
		return zero, errs.Invalidf("actor instance is a %T, not a %T", instance, zero)
	}
	return t, nil
}
