package errs

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
)

// maxFrames bounds the frames an error's stack keeps.
const maxFrames = 64

// StackError is an error with the stack of the goroutine that made it
// (atoll.Errorf). It wraps its error: errors.Is and errors.As see through
// it.
type StackError struct {
	err error
	pcs []uintptr
}

// WithStack returns err with the stack of its caller's caller, skip
// frames further up (0: the function calling WithStack's caller).
func WithStack(err error, skip int) *StackError {
	pcs := make([]uintptr, maxFrames)
	n := runtime.Callers(skip+3, pcs)
	return &StackError{err: err, pcs: pcs[:n:n]}
}

func (e *StackError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *StackError) Unwrap() error { return e.err }

// StackTrace returns the program counters of the stack where the error
// was made, as runtime.Callers gives them.
func (e *StackError) StackTrace() []uintptr { return e.pcs }

func (*StackError) plainWrapper() {}

// StackOf returns the stack where err was made, formatted, if some error
// along its Unwrap chain records one: a StackTrace method returning a
// slice of program counters (atoll.Errorf's errors, and
// github.com/pkg/errors', whose Frame is a uintptr). The innermost such
// stack wins: it is the closest to where the error began.
func StackOf(err error) (string, bool) {
	var found []uintptr
	queue := []error{err}
	for visited := 0; len(queue) > 0 && visited < maxChain; visited++ {
		e := queue[0]
		queue = queue[1:]
		if e == nil {
			continue
		}
		if pcs, ok := stackTrace(e); ok {
			found = pcs
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			queue = append(queue, u.Unwrap())
		case interface{ Unwrap() []error }:
			queue = append(queue, u.Unwrap()...)
		}
	}
	if len(found) == 0 {
		return "", false
	}
	return FormatStack(found), true
}

// stackTrace calls e's StackTrace method if it returns program counters.
func stackTrace(e error) (pcs []uintptr, ok bool) {
	m := reflect.ValueOf(e).MethodByName("StackTrace")
	if !m.IsValid() {
		return nil, false
	}
	mt := m.Type()
	if mt.NumIn() != 0 || mt.NumOut() != 1 || mt.Out(0).Kind() != reflect.Slice || mt.Out(0).Elem().Kind() != reflect.Uintptr {
		return nil, false
	}
	defer func() {
		if recover() != nil { // a StackTrace on a nil receiver
			pcs, ok = nil, false
		}
	}()
	v := m.Call(nil)[0]
	n := min(v.Len(), maxFrames)
	pcs = make([]uintptr, n)
	for i := range pcs {
		pcs[i] = uintptr(v.Index(i).Uint())
	}
	return pcs, n > 0
}

// FormatStack formats program counters from runtime.Callers as
// debug.Stack formats a goroutine's frames: function, then file:line.
func FormatStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" {
			fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		}
		if !more {
			break
		}
	}
	return b.String()
}
