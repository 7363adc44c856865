package atoll

import (
	"fmt"
	"reflect"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// RegisterError makes a task's errors come back to its caller as
// themselves, so errors.As and errors.Is work across processes and nodes
// (and with goroutine workers, whose errors take the same path). Register
// at package init, like functions, so every process of the binary knows
// the same errors:
//
//	type QuotaError struct{ User string; Limit int }
//	func (e *QuotaError) Error() string { ... }
//	var ErrNoSuchUser = errors.New("no such user")
//
//	func init() {
//		atoll.RegisterError[*QuotaError]() // an error type
//		atoll.RegisterError(ErrNoSuchUser) // a sentinel value
//	}
//
// With a type argument and no value, E is the error type to register: a
// value of that type anywhere along the task error's Unwrap chain
// (fmt.Errorf's %w, errors.Join, wrappers of your own) is sent to the
// caller gob-encoded, so its exported fields survive, and errors.As finds
// it inside the caller's TaskError. The type must be named, implement
// error, and have fields gob can encode (or none at all).
//
// With values, each is a sentinel: errors.Is(err, ErrNoSuchUser) holds on
// the caller's side when it held for the task's error, however deeply
// wrapped. Sentinels are known across processes by their message, which
// must be unique among them.
//
// An error of an unregistered type keeps its message, and the TaskError
// names the type to register (TaskError.UnregisteredType, RegisterHint). RegisterError
// panics on a type or value it cannot register, like NewFunc on a
// duplicate name.
func RegisterError[E error](sentinels ...E) {
	t := reflect.TypeFor[E]()
	if t.Kind() != reflect.Interface {
		if err := errs.RegisterType(t); err != nil {
			panic(err.Error())
		}
	} else if len(sentinels) == 0 {
		panic(fmt.Sprintf("atoll: RegisterError[%v]() registers nothing: give a concrete error type, as in RegisterError[*MyError](), or sentinel values, as in RegisterError(ErrMySentinel)", t))
	}
	for _, s := range sentinels {
		if err := errs.RegisterSentinel(s); err != nil {
			panic(err.Error())
		}
	}
}

// Errorf is fmt.Errorf that also records the stack where it is called.
// A task that returns it (or an error wrapping it) reports that stack as
// its TaskError's RemoteStack, instead of the worker's stack where the
// runtime received the error. Errors with a StackTrace method returning
// program counters (github.com/pkg/errors' do) are reported the same way.
func Errorf(format string, args ...any) error {
	return errs.WithStack(fmt.Errorf(format, args...), 0)
}
