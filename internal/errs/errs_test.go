package errs

import (
	"context"
	"errors"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
)

func TestEveryCodeRoundTripsToItsSentinel(t *testing.T) {
	cases := []struct {
		err      error
		sentinel error
	}{
		{&TaskError{TaskName: "f", Message: "boom", RemoteStack: "stack"}, ErrTask},
		{&WorkerCrashedError{TaskName: "f", Message: "killed"}, ErrWorkerCrashed},
		{&ActorDiedError{Name: "a", Message: "restarts exhausted"}, ErrActorDied},
		{&ObjectStoreFullError{Requested: 10, Capacity: 5}, ErrObjectStoreFull},
		{&ObjectLostError{Message: "gone"}, ErrObjectLost},
		{&GetTimeoutError{}, ErrGetTimeout},
		{&CancelledError{TaskName: "f"}, ErrCancelled},
		{&OwnerDiedError{}, ErrOwnerDied},
		{Invalidf("bad %d", 1), ErrInvalidArgument},
		{NotFoundf("no actor %q", "x"), ErrNotFound},
		{Unavailablef("down"), ErrUnavailable},
		{&NodeDiedError{NodeID: "ab", Message: "left"}, ErrNodeDied},
		{&UnschedulableError{TaskName: "f", Reason: "no node"}, ErrUnschedulable},
		{&ForwardLostError{NodeID: "ab", TaskName: "f", TaskID: "00ff", Message: "not confirmed"}, ErrForwardLost},
		{&ResourceExhaustedError{NodeID: "ab", TaskName: "f", TaskID: "00ff", Message: "quota"}, ErrResourceExhausted},
		{Exhaustedf("table full"), ErrResourceExhausted},
		{FunctionFailed("map", "double", "", errors.New("boom")), ErrFunctionFailed},
		{Malformedf("graph task spec", "truncated"), ErrMalformed},
		{Malformedf("graph task spec", "truncated"), ErrInvalidArgument},
		{&NotRegisteredError{Kind: "graph function", Name: "inc"}, ErrNotFound},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.sentinel) {
			t.Errorf("%T does not match its sentinel", c.err)
		}
		back := FromProto(ToProto(c.err))
		if !errors.Is(back, c.sentinel) {
			t.Errorf("%T after the wire: %T %v does not match its sentinel", c.err, back, back)
		}
		if ToProto(c.err).Code == atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED {
			t.Errorf("%T has no code", c.err)
		}
	}
}

func TestContextCompatibility(t *testing.T) {
	if !errors.Is(&GetTimeoutError{}, context.DeadlineExceeded) {
		t.Error("GetTimeoutError should match context.DeadlineExceeded")
	}
	if !errors.Is(&CancelledError{}, context.Canceled) {
		t.Error("CancelledError should match context.Canceled")
	}
}

func TestTaskErrorKeepsDetails(t *testing.T) {
	cause := errors.New("root cause")
	err := error(&TaskError{TaskName: "sum", TaskID: "00ff", Message: cause.Error(), RemoteStack: "goroutine 1", Cause: cause})
	if !errors.Is(err, cause) {
		t.Error("in-process TaskError should unwrap to its cause")
	}
	var te *TaskError
	if !errors.As(FromProto(ToProto(err)), &te) || te.RemoteStack != "goroutine 1" || te.TaskName != "sum" || te.TaskID != "00ff" {
		t.Errorf("details lost on the wire: %+v", te)
	}
	if ToProto(errors.New("plain")).Code != atollpb.ErrorCode_TASK_ERROR {
		t.Error("a plain error should travel as TASK_ERROR")
	}
}

func TestForwardLostKeepsDetails(t *testing.T) {
	err := &ForwardLostError{NodeID: "0a0b", TaskName: "sum", TaskID: "00ff", Message: "not confirmed within the 5s lease"}
	info := ToProto(err)
	if info.Code != atollpb.ErrorCode_FORWARD_LOST {
		t.Fatalf("code %v, want FORWARD_LOST", info.Code)
	}
	var fl *ForwardLostError
	if !errors.As(FromProto(info), &fl) || *fl != *err {
		t.Errorf("after the wire: %+v, want %+v", fl, err)
	}
}

func TestResourceExhaustedKeepsDetails(t *testing.T) {
	for _, err := range []*ResourceExhaustedError{
		{NodeID: "0a0b", TaskName: "sum", TaskID: "00ff", Message: "4096 tasks of node 0c0d held here"},
		{Message: "the GCS holds 10000 live nodes"},
	} {
		info := ToProto(err)
		if info.Code != atollpb.ErrorCode_RESOURCE_EXHAUSTED {
			t.Fatalf("code %v, want RESOURCE_EXHAUSTED", info.Code)
		}
		var re *ResourceExhaustedError
		if !errors.As(FromProto(info), &re) || *re != *err {
			t.Errorf("after the wire: %+v, want %+v", re, err)
		}
	}
}

// ObjectStoreFull says after the wire what ran out: memory, the spill
// disk, or (an older sender) nothing.
func TestObjectStoreFullKeepsResource(t *testing.T) {
	for _, err := range []*ObjectStoreFullError{
		{ObjectID: "0a0b", Requested: 10, Capacity: 5, Used: 5, Resource: StoreDisk},
		{ObjectID: "0a0b", Requested: 10, Capacity: 5, Used: 5, Resource: StoreMemory},
		{ObjectID: "0a0b", Message: "creation failed by fault injection"},
	} {
		var sf *ObjectStoreFullError
		if !errors.As(FromProto(ToProto(err)), &sf) {
			t.Fatalf("%v: not an ObjectStoreFullError after the wire", err)
		}
		if sf.Resource != err.Resource || sf.Error() != err.Error() || sf.ObjectID != err.ObjectID {
			t.Errorf("after the wire: %q (%s), want %q (%s)", sf, sf.Resource, err, err.Resource)
		}
	}
}
