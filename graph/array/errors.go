package array

import (
	"fmt"
	"reflect"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Errors. An operation whose operands do not fit together returns an
// Array holding a ShapeError, ChunkError or AxisError (Err, and every
// computation of it, returns it); each matches atoll.ErrInvalidArgument.
// They come back typed from the chunk tasks too, inside the task's
// atoll.TaskError.

// ShapeError is returned when the shapes of an operation's operands do not
// fit together: elementwise operands of different shapes, or a MatMul
// whose inner dimensions differ.
type ShapeError struct {
	Op   string // "Add", "MatMul", ...
	A, B [2]int // the operands' shapes
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("array: %s: shapes %dx%d and %dx%d do not match", e.Op, e.A[0], e.A[1], e.B[0], e.B[1])
}

// Is matches atoll.ErrInvalidArgument.
func (e *ShapeError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// ChunkError is returned for chunk sizes that cannot describe an array:
// a chunk size below 1, or chunks along an axis that do not add up to its
// length; and by a chunk task whose chunk has another size than its
// place in the array (Shape is then zero).
type ChunkError struct {
	Op     string
	Shape  [2]int
	Reason string
}

func (e *ChunkError) Error() string {
	if e.Shape == [2]int{} {
		return fmt.Sprintf("array: %s: bad chunk: %s", e.Op, e.Reason)
	}
	return fmt.Sprintf("array: %s: bad chunks for a %dx%d array: %s", e.Op, e.Shape[0], e.Shape[1], e.Reason)
}

// Is matches atoll.ErrInvalidArgument.
func (e *ChunkError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// AxisError is returned for an axis other than Axis0, Axis1 or AllAxes.
type AxisError struct {
	Op   string
	Axis Axis
}

func (e *AxisError) Error() string {
	return fmt.Sprintf("array: %s: bad axis %d (want 0, 1 or AllAxes)", e.Op, int(e.Axis))
}

// Is matches atoll.ErrInvalidArgument.
func (e *AxisError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// The errors travel from chunk tasks as themselves.
func init() {
	for _, t := range []reflect.Type{reflect.TypeFor[*ShapeError](), reflect.TypeFor[*ChunkError](), reflect.TypeFor[*AxisError]()} {
		if err := errs.RegisterType(t); err != nil {
			panic(err)
		}
	}
}
