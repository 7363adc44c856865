package errs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A library's errors inside a task's error come back as themselves, with
// their fields, and with what they wrap that was registered.
func TestLibraryErrorsTravelInsideTaskErrors(t *testing.T) {
	fnErr := FunctionFailed("map", "charge", "", fmt.Errorf("row 3: %w", &quotaError{User: "ann", Limit: 3}))
	cause := fmt.Errorf("data: %w", fnErr)
	back := wire(t, &TaskError{TaskName: "atoll/data.exec", Message: cause.Error(), Cause: cause})
	var fe *FunctionError
	if !errors.As(back, &fe) || fe.Func != "charge" || fe.Op != "map" || fe.Panicked || fe.Message != "row 3: user ann over quota 3" {
		t.Fatalf("errors.As found %+v in %v", fe, back)
	}
	var q *quotaError
	if !errors.As(back, &q) || q.User != "ann" {
		t.Fatalf("the function's registered error was lost: %v", back)
	}
	if !errors.Is(back, ErrFunctionFailed) || !errors.Is(back, ErrTask) {
		t.Fatalf("errors.Is: %v", back)
	}
	var te *TaskError
	if !errors.As(back, &te) || te.UnregisteredType != "" {
		t.Fatalf("a library error is named as unregistered: %+v", te)
	}

	for _, c := range []struct {
		name     string
		err      error
		matches  []error
		asTarget any
	}{
		{"malformed", fmt.Errorf("graph key %q: %w", "k", Malformedf("graph task spec", "dependency %d of %d", 3, 2)),
			[]error{ErrMalformed, ErrInvalidArgument}, new(*MalformedError)},
		{"not registered", &NotRegisteredError{Kind: "graph function", Name: "inc"}, []error{ErrNotFound}, new(*NotRegisteredError)},
		{"code error", fmt.Errorf("graph key %q: %w", "k", Invalidf("a literal has no type")), []error{ErrInvalidArgument}, nil},
		{"wrapped sentinel", fmt.Errorf("%w: data: Select of no column", ErrInvalidArgument), []error{ErrInvalidArgument}, nil},
	} {
		back := wire(t, &TaskError{TaskName: "f", Message: c.err.Error(), Cause: c.err})
		for _, m := range c.matches {
			if !errors.Is(back, m) {
				t.Errorf("%s: %v does not match %v after the wire", c.name, back, m)
			}
		}
		if c.asTarget != nil && !errors.As(back, c.asTarget) {
			t.Errorf("%s: errors.As(%T) fails after the wire: %v", c.name, c.asTarget, back)
		}
		if errors.Is(back, ErrNotFound) != errors.Is(c.err, ErrNotFound) {
			t.Errorf("%s: matches ErrNotFound only after the wire", c.name)
		}
	}
	me := wire(t, &TaskError{TaskName: "f", Message: "m", Cause: Malformedf("dataset task spec", "op 2: unknown kind %q", "x")})
	var m *MalformedError
	if !errors.As(me, &m) || m.What != "dataset task spec" || m.Message != `op 2: unknown kind "x"` {
		t.Fatalf("MalformedError fields: %+v", m)
	}
}

func panicky(n int) int {
	var s []int
	return s[n] // index out of range
}

// A panic of a program's function becomes a FunctionError with the
// panic's stack.
func TestRecoverFunction(t *testing.T) {
	call := func() (v int, err error) {
		defer RecoverFunction(&err, "", "t.panicky", "key-1")
		return panicky(3), nil
	}
	_, err := call()
	var fe *FunctionError
	if !errors.As(err, &fe) || !fe.Panicked || fe.Func != "t.panicky" || fe.Key != "key-1" || !strings.Contains(fe.Message, "index out of range") {
		t.Fatalf("got %v (%+v)", err, fe)
	}
	var re interface{ RuntimeError() }
	if !errors.As(err, &re) {
		t.Error("a runtime error's panic value is not the FunctionError's cause")
	}
	stack, ok := StackOf(err)
	if !ok || !strings.Contains(stack, "errs.panicky") {
		t.Fatalf("the stack does not show where it panicked:\n%s", stack)
	}
	if got := err.Error(); got != "t.panicky panicked: "+fe.Message {
		t.Errorf("message %q", got)
	}
	// Its stack becomes the TaskError's; the type travels.
	back := wire(t, &TaskError{TaskName: "f", Message: err.Error(), Cause: err})
	if !errors.As(back, &fe) || !fe.Panicked || fe.Key != "key-1" {
		t.Fatalf("after the wire: %+v", fe)
	}
	// A huge message is cut so the value still travels.
	big := FunctionFailed("map", "f", "", errors.New(strings.Repeat("x", 1<<20)))
	back = wire(t, &TaskError{TaskName: "f", Message: "m", Cause: big})
	if !errors.As(back, &fe) || len(fe.Message) > maxFunctionMessage+64 {
		t.Fatalf("a huge function error did not travel cut: %v", back)
	}
}
