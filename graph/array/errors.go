package array

import "fmt"

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

// ChunkError is returned for chunk sizes that cannot describe an array:
// a chunk size below 1, or chunks along an axis that do not add up to its
// length.
type ChunkError struct {
	Op     string
	Shape  [2]int
	Reason string
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("array: %s: bad chunks for a %dx%d array: %s", e.Op, e.Shape[0], e.Shape[1], e.Reason)
}

// AxisError is returned for an axis other than Axis0, Axis1 or AllAxes.
type AxisError struct {
	Op   string
	Axis Axis
}

func (e *AxisError) Error() string {
	return fmt.Sprintf("array: %s: bad axis %d (want 0, 1 or AllAxes)", e.Op, int(e.Axis))
}
