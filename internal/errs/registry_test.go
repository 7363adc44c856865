package errs

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// quotaError is a registered struct error type.
type quotaError struct {
	User  string
	Limit int
}

func (e *quotaError) Error() string { return fmt.Sprintf("user %s over quota %d", e.User, e.Limit) }

// emptyError has no fields: gob cannot encode it, registration still works.
type emptyError struct{}

func (emptyError) Error() string { return "empty" }

// secretError is never registered.
type secretError struct{ Code int }

func (e *secretError) Error() string { return fmt.Sprintf("secret %d", e.Code) }

// unexportedError has only unexported fields: gob cannot carry it.
type unexportedError struct{ msg string }

func (e *unexportedError) Error() string { return e.msg }

var errRegisteredSentinel = errors.New("registry test: sentinel")

func init() {
	for _, t := range []reflect.Type{reflect.TypeFor[*quotaError](), reflect.TypeFor[emptyError]()} {
		if err := RegisterType(t); err != nil {
			panic(err)
		}
	}
	if err := RegisterSentinel(errRegisteredSentinel); err != nil {
		panic(err)
	}
}

// wire sends err through its wire form, marshalled and unmarshalled as a
// peer would receive it.
func wire(t *testing.T, err error) error {
	t.Helper()
	b, merr := proto.Marshal(ToProto(err))
	if merr != nil {
		t.Fatal(merr)
	}
	var info atollpb.ErrorInfo
	if merr := proto.Unmarshal(b, &info); merr != nil {
		t.Fatal(merr)
	}
	return FromProto(&info)
}

func TestRegisteredErrorsComeBackAsThemselves(t *testing.T) {
	cause := fmt.Errorf("charging: %w", errors.Join(&quotaError{User: "ann", Limit: 3}, fmt.Errorf("step: %w", errRegisteredSentinel), emptyError{}))
	back := wire(t, &TaskError{TaskName: "charge", TaskID: "00ff", Message: cause.Error(), Cause: cause})
	var q *quotaError
	if !errors.As(back, &q) || q.User != "ann" || q.Limit != 3 {
		t.Fatalf("errors.As found %+v in %v", q, back)
	}
	if !errors.Is(back, errRegisteredSentinel) || !errors.Is(back, ErrTask) {
		t.Fatalf("errors.Is lost the sentinel or ErrTask: %v", back)
	}
	var e emptyError
	if !errors.As(back, &e) {
		t.Fatalf("errors.As did not find the field-less type in %v", back)
	}
	var te *TaskError
	if !errors.As(back, &te) || te.TaskName != "charge" || te.ErrorType != "*fmt.wrapError" || te.UnregisteredType != "" {
		t.Fatalf("TaskError details: %+v", te)
	}
	if te.RegisterHint() != "" {
		t.Fatalf("a registered error asks to register it: %v", te.RegisterHint())
	}
	// Through a second hop (a task returning the error it got): still
	// itself.
	again := wire(t, &TaskError{TaskName: "outer", Message: back.Error(), Cause: fmt.Errorf("outer: %w", back)})
	if !errors.As(again, &q) || q.User != "ann" || !errors.Is(again, errRegisteredSentinel) {
		t.Fatalf("second hop lost the registered errors: %v", again)
	}
}

func TestUnregisteredErrorKeepsMessageAndNamesItsType(t *testing.T) {
	cause := fmt.Errorf("wrapped: %w", &secretError{Code: 7})
	back := wire(t, &TaskError{TaskName: "f", Message: cause.Error(), Cause: cause})
	var s *secretError
	if errors.As(back, &s) {
		t.Fatal("an unregistered type came back as itself")
	}
	var te *TaskError
	if !errors.As(back, &te) || te.Message != "wrapped: secret 7" || te.UnregisteredType != TypeName(reflect.TypeFor[*secretError]()) {
		t.Fatalf("TaskError %+v", te)
	}
	if back.Error() != "atoll: task f failed: wrapped: secret 7" {
		t.Fatalf("the message is not the task's: %v", back)
	}
	if !strings.Contains(te.RegisterHint(), "atoll.RegisterError[*github.com/atoll-runtime/atoll/internal/errs.secretError]()") {
		t.Fatalf("the hint does not say what to register: %v", te.RegisterHint())
	}
}

func TestRegisterRefusesWhatCannotTravel(t *testing.T) {
	if err := RegisterType(reflect.TypeFor[*unexportedError]()); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "export its fields") {
		t.Fatalf("unexported fields: %v", err)
	}
	if err := RegisterType(reflect.TypeFor[error]()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an interface type: %v", err)
	}
	if err := RegisterType(reflect.TypeFor[quotaError]()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a type whose pointer is the error: %v", err)
	}
	if err := RegisterSentinel(errors.New("registry test: sentinel")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a second sentinel with the same message: %v", err)
	}
	if err := RegisterSentinel(errRegisteredSentinel); err != nil {
		t.Fatalf("registering the same sentinel again: %v", err)
	}
}

func TestPeerErrorsAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 3*MaxStack)
	info := &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, Message: huge, RemoteStack: huge, TaskName: "f",
		Sentinels: []string{"no such sentinel", errRegisteredSentinel.Error()}}
	for range 3 * MaxRegisteredValues {
		info.Registered = append(info.Registered, &atollpb.RegisteredError{Type: TypeName(reflect.TypeFor[*quotaError]()), Gob: []byte("not gob")})
	}
	info.Registered = append(info.Registered, &atollpb.RegisteredError{Type: "unknown.Type", Gob: []byte{1}},
		&atollpb.RegisteredError{Type: TypeName(reflect.TypeFor[*quotaError]()), Gob: make([]byte, MaxRegisteredValue+1)})
	var te *TaskError
	if !errors.As(FromProto(info), &te) {
		t.Fatal("not a TaskError")
	}
	if len(te.Message) > MaxMessage+64 || len(te.RemoteStack) > MaxStack+64 {
		t.Fatalf("message %d and stack %d bytes: over the bounds", len(te.Message), len(te.RemoteStack))
	}
	// The undecodable values are dropped; the known sentinel survives.
	if !errors.Is(te, errRegisteredSentinel) {
		t.Fatal("the valid sentinel was dropped with the bad values")
	}
	var q *quotaError
	if errors.As(te, &q) {
		t.Fatal("an undecodable value came back")
	}
	// And the sending side truncates too.
	if out := ToProto(&TaskError{Message: huge, RemoteStack: huge}); len(out.Message) > MaxMessage+64 || len(out.RemoteStack) > MaxStack+64 {
		t.Fatalf("sent message %d and stack %d bytes", len(out.Message), len(out.RemoteStack))
	}
}

// pkgErrorsStyle mimics github.com/pkg/errors: StackTrace returns a
// slice of a uintptr type.
type frame uintptr
type pkgErrorsStyle struct{ pcs []frame }

func (e *pkgErrorsStyle) Error() string { return "pkg/errors style" }
func (e *pkgErrorsStyle) StackTrace() []frame {
	return e.pcs
}

func makeStackError() error { return WithStack(errors.New("made here"), -1) }

func TestStackOfFindsTheInnermostRecordedStack(t *testing.T) {
	if _, ok := StackOf(errors.New("plain")); ok {
		t.Fatal("a plain error has no stack")
	}
	s, ok := StackOf(fmt.Errorf("outer: %w", makeStackError()))
	if !ok || !strings.Contains(s, "errs.makeStackError") || !strings.Contains(s, "registry_test.go") {
		t.Fatalf("stack of a WithStack error:\n%s", s)
	}
	pcs := WithStack(nil, -1).StackTrace()
	style := &pkgErrorsStyle{}
	for _, pc := range pcs {
		style.pcs = append(style.pcs, frame(pc))
	}
	if s, ok := StackOf(fmt.Errorf("w: %w", style)); !ok || !strings.Contains(s, "TestStackOfFindsTheInnermostRecordedStack") {
		t.Fatalf("pkg/errors-style stack:\n%s", s)
	}
}
