package errs

import "fmt"

// ErrShutDown: atoll was running in this process and Shutdown stopped it.
// It matches ErrNotInitialized and ErrUnavailable too, so code that tests
// for those keeps working.
var ErrShutDown error = shutDownError{}

type shutDownError struct{}

func (shutDownError) Error() string {
	return "atoll: atoll.Shutdown has been called: the runtime is stopped; call atoll.Init again to start a new one (refs and handles from before Shutdown stay invalid)"
}

// Is matches ErrNotInitialized and ErrUnavailable.
func (shutDownError) Is(target error) bool {
	return target == ErrNotInitialized || target == ErrUnavailable
}

// ErrZeroRef: an operation was given a zero ObjectRef (never assigned) or
// a nil Ref. It matches ErrInvalidArgument.
var ErrZeroRef = fmt.Errorf("%w: zero ObjectRef", ErrInvalidArgument)

// ZeroRef reports a zero ref passed to op (refs[index] if index >= 0).
func ZeroRef(op string, index int) error {
	where := op
	if index >= 0 {
		where = fmt.Sprintf("%s: refs[%d]", op, index)
	}
	return fmt.Errorf("%w in %s: it was never assigned (or its call failed before returning a ref); pass refs returned by Put or Remote", ErrZeroRef, where)
}
