// Package errs defines atoll's typed errors, their stable wire codes and
// their conversion to and from protobuf ErrorInfo.
//
// Every error type has one code (atollpb.ErrorCode) and one sentinel, so
// callers can test with errors.Is(err, atoll.ErrActorDied) or extract details
// with errors.As(err, &actorDied). The root package re-exports these types.
//
// # Task errors on the wire
//
// A task's own failure travels as an ErrorInfo with code TASK_ERROR, the
// same way from in-process workers, worker processes and other nodes (an
// in-process worker's result goes through the wire form too), so what a
// caller can test does not depend on where the task ran.
//
//   - Worker side (internal/runtime's executor, ToProto): the returned
//     error becomes a TaskError (task name, id, message). RemoteStack is a
//     panic's stack; else the innermost stack the error recorded along its
//     Unwrap chain (a StackTrace() method returning program counters:
//     atoll.Errorf's StackError, github.com/pkg/errors); else the executing
//     goroutine's stack where the runtime received the error (the stack of
//     the return itself is gone in Go). encodeCause walks the chain
//     (Unwrap() error and Unwrap() []error, at most 64 errors): each value
//     of a type registered with atoll.RegisterError is gob-encoded into
//     registered (type name, bytes); the names of the registered sentinels
//     the error matches with errors.Is go into sentinels; error_type is the
//     returned error's Go type and unregistered_type the first type along
//     the chain that is neither registered, nor a plain wrapper
//     (fmt.Errorf, errors.Join, errors.New, atoll's own), nor a registered
//     sentinel.
//   - Caller side (FromProto): the TaskError's Cause is a remoteCause whose
//     Unwrap() []error holds the decoded values and the process's own
//     sentinel values, so errors.As and errors.Is see through TaskError to
//     them. A nested task's error keeps them: the outer task's chain
//     reaches the inner remoteCause, whose values are encoded again.
//   - Registry (registry.go): the error types and sentinels are two kinds
//     of the program's registry (registry.ErrorTypes, registry.Sentinels),
//     filled at package init in every process of the binary. Types are
//     known by package path and name (*example.com/app.QuotaError),
//     sentinels by their message (unique). RegisterError refuses at init
//     what cannot travel (unnamed or interface types, types gob cannot
//     encode; a struct with no fields needs no bytes).
//   - Bounds (a peer's input): the sender clips the message to MaxMessage
//     (16 KiB) and the stack to MaxStack (64 KiB), sends values of at most
//     MaxRegisteredValue (64 KiB; a larger one is named in
//     unregistered_type), at most MaxRegisteredValues (8) values and
//     MaxSentinels (32) sentinels; the receiver enforces the same bounds
//     again and drops, with a log line, values of types it does not know,
//     values that do not decode, and names it does not know. What is
//     dropped leaves the message intact.
//
// The libraries' errors share this table: FunctionError (FUNCTION_FAILED:
// a user's function, or a task callback, returned an error or panicked,
// naming it), MalformedError (MALFORMED, also INVALID_ARGUMENT: a message
// that does not decode), NotRegisteredError (NOT_FOUND), and per library
// graph/array's and data's own. They are registered at init with the
// sentinels of INVALID_ARGUMENT, NOT_FOUND, FUNCTION_FAILED and
// MALFORMED, so errors.As and errors.Is find them wherever the task ran.
package errs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Sentinels, one per code. errors.Is(err, ErrX) is true for every error of
// the matching type.
var (
	ErrTask            = errors.New("atoll: task failed")
	ErrWorkerCrashed   = errors.New("atoll: worker crashed")
	ErrActorDied       = errors.New("atoll: actor died")
	ErrObjectStoreFull = errors.New("atoll: object store full")
	ErrObjectLost      = errors.New("atoll: object lost")
	// ErrObjectReconstructionFailed: lost, and its lineage cannot rebuild it.
	ErrObjectReconstructionFailed = errors.New("atoll: object reconstruction failed")
	ErrGetTimeout                 = errors.New("atoll: get timed out")
	ErrCancelled                  = errors.New("atoll: task cancelled")
	ErrOwnerDied                  = errors.New("atoll: owner died")
	ErrInvalidArgument            = errors.New("atoll: invalid argument")
	ErrNotFound                   = errors.New("atoll: not found")
	ErrUnavailable                = errors.New("atoll: runtime unavailable")
	ErrNodeDied                   = errors.New("atoll: node died")
	ErrUnschedulable              = errors.New("atoll: task unschedulable")
	ErrForwardLost                = errors.New("atoll: forwarded work lost")
	ErrNotInitialized             = fmt.Errorf("%w: atoll.Init has not been called", ErrUnavailable)
	ErrAlreadyStarted             = errors.New("atoll: already initialized")
	// ErrUnauthenticated: a peer refused this process's credentials, or
	// proved none of its own (no cluster secret, or a different one).
	// It is local: it never travels as an ErrorCode.
	ErrUnauthenticated = errors.New("atoll: not authenticated")
	// ErrResourceExhausted: a bound on state that other nodes or processes
	// can grow was reached (a node's quota of forwarded work, a GCS table's
	// cap, the size of a GCS bucket).
	ErrResourceExhausted = errors.New("atoll: resource exhausted")
	// ErrPermissionDenied: the caller's credentials do not allow the
	// request (a reader's change, fault injection on a cluster whose head
	// does not allow it).
	ErrPermissionDenied = errors.New("atoll: permission denied")
	errUnknownErrorCode = errors.New("atoll: unknown error")
)

// TaskError is a task's (or actor method's) own failure: it returned an
// error or panicked. Message is the error's text and RemoteStack the stack
// where it was made (a panic's stack, the StackTrace of an error that has
// one, as atoll.Errorf's and github.com/pkg/errors' do, or else the
// worker's stack where the runtime received the error).
//
// Cause is what survives of the task's error: values of the error types
// and the sentinels registered with atoll.RegisterError, which errors.As
// and errors.Is find through Unwrap, in this process and across processes
// and nodes alike. An error of an unregistered type keeps its message;
// ErrorType names its Go type and UnregisteredType the type to register
// (RegisterHint says so in a sentence).
type TaskError struct {
	TaskName    string
	TaskID      string
	Message     string
	RemoteStack string
	// ErrorType is the Go type of the error the task returned.
	ErrorType string
	// UnregisteredType is the first type along the error's Unwrap chain
	// that is not registered (and not a plain wrapper such as
	// fmt.Errorf's): errors.As cannot find it on the caller's side.
	UnregisteredType string
	Cause            error
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("atoll: task %s failed: %s", e.TaskName, e.Message)
}

// RegisterHint says what to do when errors.As cannot find the task's
// error type: "" when nothing along its chain was left unregistered.
func (e *TaskError) RegisterHint() string {
	if e.UnregisteredType == "" {
		return ""
	}
	return fmt.Sprintf("error type %s is not registered, so errors.As cannot find it in the caller: call atoll.RegisterError[%s]() at package init",
		e.UnregisteredType, e.UnregisteredType)
}

// Is matches ErrTask.
func (e *TaskError) Is(target error) bool { return target == ErrTask }

// Unwrap returns what survives of the task's own error (see TaskError).
func (e *TaskError) Unwrap() error { return e.Cause }

// WorkerCrashedError: the worker died while running the task and retries
// were exhausted.
type WorkerCrashedError struct {
	TaskName string
	TaskID   string
	Message  string
}

func (e *WorkerCrashedError) Error() string {
	return fmt.Sprintf("atoll: worker running task %s crashed: %s", e.TaskName, e.Message)
}

// Is matches ErrWorkerCrashed.
func (e *WorkerCrashedError) Is(target error) bool { return target == ErrWorkerCrashed }

// ActorDiedError: the actor is dead (killed, restarts exhausted, or its
// constructor failed) and the call could not run.
type ActorDiedError struct {
	ActorID string
	Name    string
	Message string
}

func (e *ActorDiedError) Error() string {
	n := e.Name
	if n == "" {
		n = e.ActorID
	}
	return fmt.Sprintf("atoll: actor %s died: %s", n, e.Message)
}

// Is matches ErrActorDied.
func (e *ActorDiedError) Is(target error) bool { return target == ErrActorDied }

// ObjectStoreFullError: a creation, or the restore of a spilled object,
// could not get space in time. Resource says what ran out, when the store
// knows.
type ObjectStoreFullError struct {
	ObjectID  string
	Requested uint64
	Capacity  uint64
	Used      uint64
	Resource  StoreResource
	Message   string
}

// StoreResource is what a full object store ran out of.
type StoreResource string

const (
	// StoreMemory: the store's memory, with nothing in it that can move
	// to disk (pinned, being written, or spilling is off).
	StoreMemory StoreResource = "memory"
	// StoreDisk: the spill directories, while objects in memory wait to
	// be spilled there: full, or failing the writes (the message then
	// gives the latest write's error).
	StoreDisk StoreResource = "disk"
)

const storeFullPrefix = "atoll: object store full"

func (e *ObjectStoreFullError) Error() string {
	prefix := storeFullPrefix
	if e.Resource != "" {
		prefix += " (" + string(e.Resource) + ")"
	}
	if e.Message != "" {
		return prefix + ": " + e.Message
	}
	return fmt.Sprintf("%s: %d bytes requested, %d of %d used", prefix, e.Requested, e.Used, e.Capacity)
}

// storeFullFromWire rebuilds the error from its wire message, Resource
// included (it travels in the message's prefix).
func storeFullFromWire(objectID, msg string) *ObjectStoreFullError {
	e := &ObjectStoreFullError{ObjectID: objectID, Message: msg}
	for _, r := range []StoreResource{StoreMemory, StoreDisk} {
		if p := storeFullPrefix + " (" + string(r) + "): "; strings.HasPrefix(msg, p) {
			e.Resource, e.Message = r, msg[len(p):]
			return e
		}
	}
	e.Message = trimPrefix(msg, storeFullPrefix+": ")
	return e
}

// Is matches ErrObjectStoreFull.
func (e *ObjectStoreFullError) Is(target error) bool { return target == ErrObjectStoreFull }

// ObjectLostError: the object's value is gone and cannot be reconstructed.
type ObjectLostError struct {
	ObjectID string
	Message  string
}

func (e *ObjectLostError) Error() string {
	return fmt.Sprintf("atoll: object %s lost: %s", e.ObjectID, e.Message)
}

// Is matches ErrObjectLost.
func (e *ObjectLostError) Is(target error) bool { return target == ErrObjectLost }

// ObjectReconstructionFailedError: every copy of the object was lost and
// its lineage cannot rebuild it; Reason says why. It matches ErrObjectLost
// and ErrObjectReconstructionFailed.
type ObjectReconstructionFailedError struct {
	ObjectID string
	Reason   string
}

func (e *ObjectReconstructionFailedError) Error() string {
	return fmt.Sprintf("atoll: object %s lost and not reconstructed: %s", e.ObjectID, e.Reason)
}

// Is matches ErrObjectLost and ErrObjectReconstructionFailed.
func (e *ObjectReconstructionFailedError) Is(target error) bool {
	return target == ErrObjectLost || target == ErrObjectReconstructionFailed
}

// GetTimeoutError: a Get or Wait did not finish before its deadline. It also
// matches context.DeadlineExceeded.
type GetTimeoutError struct {
	ObjectID string
	// TaskName and TaskID name the task that makes the object, when the
	// caller owns it ("" for a Put object or a borrowed ref); TaskState
	// says where that task was when the deadline passed.
	TaskName  string
	TaskID    string
	TaskState string
}

func (e *GetTimeoutError) Error() string {
	if e.TaskName == "" {
		return fmt.Sprintf("atoll: get of object %s timed out; give the context a later deadline, or Wait for it first", e.ObjectID)
	}
	state := ""
	if e.TaskState != "" {
		state = ", " + e.TaskState
	}
	return fmt.Sprintf("atoll: get of object %s timed out waiting for task %s (%s)%s; give the context a later deadline, or Cancel the task",
		e.ObjectID, e.TaskName, e.TaskID, state)
}

// Is matches ErrGetTimeout and context.DeadlineExceeded.
func (e *GetTimeoutError) Is(target error) bool {
	return target == ErrGetTimeout || target == context.DeadlineExceeded
}

// CancelledError: the task was cancelled before or while it ran. It also
// matches context.Canceled.
type CancelledError struct {
	TaskName string
	TaskID   string
}

func (e *CancelledError) Error() string {
	return fmt.Sprintf("atoll: task %s cancelled", e.TaskName)
}

// Is matches ErrCancelled and context.Canceled.
func (e *CancelledError) Is(target error) bool {
	return target == ErrCancelled || target == context.Canceled
}

// ErrCancelNonRecursive is the cause a running task's context is
// cancelled with when it alone is cancelled (atoll.Cancel with
// NonRecursive): the SDK then leaves running the tasks it submitted with
// that context (context.Cause tells them apart from a plain cancel).
var ErrCancelNonRecursive = errors.New("atoll: the task was cancelled without the tasks it submitted")

// CancelCause is the cause to cancel a running task's context with.
func CancelCause(nonRecursive bool) error {
	if nonRecursive {
		return ErrCancelNonRecursive
	}
	return context.Canceled
}

// OwnerDiedError: the process owning the object died.
type OwnerDiedError struct {
	ObjectID string
	Message  string
}

func (e *OwnerDiedError) Error() string {
	return fmt.Sprintf("atoll: owner of object %s died: %s", e.ObjectID, e.Message)
}

// Is matches ErrOwnerDied.
func (e *OwnerDiedError) Is(target error) bool { return target == ErrOwnerDied }

// NodeDiedError: the node running the task, or holding the actor or
// object, died (and retries ran out).
type NodeDiedError struct {
	NodeID   string
	TaskName string
	TaskID   string
	Message  string
}

func (e *NodeDiedError) Error() string {
	if e.TaskName != "" {
		return fmt.Sprintf("atoll: node %s running task %s died: %s", e.NodeID, e.TaskName, e.Message)
	}
	return fmt.Sprintf("atoll: node %s died: %s", e.NodeID, e.Message)
}

// Is matches ErrNodeDied.
func (e *NodeDiedError) Is(target error) bool { return target == ErrNodeDied }

// UnschedulableError: no node can run the task under its scheduling
// strategy, e.g. a hard node affinity to a node that is dead or unknown.
type UnschedulableError struct {
	TaskName string
	TaskID   string
	Reason   string
}

func (e *UnschedulableError) Error() string {
	return fmt.Sprintf("atoll: task %s cannot be scheduled: %s", e.TaskName, e.Reason)
}

// Is matches ErrUnschedulable.
func (e *UnschedulableError) Is(target error) bool { return target == ErrUnschedulable }

// ForwardLostError: work forwarded to another node was lost in transit
// (the task or its result was dropped): that node stopped confirming it
// within the forwarding lease. Owners retry it like a worker crash.
type ForwardLostError struct {
	NodeID   string
	TaskName string
	TaskID   string
	Message  string
}

func (e *ForwardLostError) Error() string {
	if e.NodeID == "" {
		return fmt.Sprintf("atoll: the result of task %s was lost: %s", e.TaskName, e.Message)
	}
	return fmt.Sprintf("atoll: task %s forwarded to node %s was lost: %s", e.TaskName, e.NodeID, e.Message)
}

// Is matches ErrForwardLost.
func (e *ForwardLostError) Is(target error) bool { return target == ErrForwardLost }

// ResourceExhaustedError: a bound on state that other nodes or processes
// can grow was reached. A node refuses work forwarded to it once it holds
// its quota for the origin node, or its overall cap (NodeID, TaskName and
// TaskID name the refusing node and the task); the GCS refuses a new entry
// past a table's cap or its bucket's size (only Message is set). Not
// retried: the same request would be refused again until the work held
// there drains.
type ResourceExhaustedError struct {
	NodeID   string
	TaskName string
	TaskID   string
	Message  string
}

func (e *ResourceExhaustedError) Error() string {
	if e.TaskName != "" || e.NodeID != "" {
		return fmt.Sprintf("atoll: node %s refused task %s: %s", e.NodeID, e.TaskName, e.Message)
	}
	return "atoll: resource exhausted: " + e.Message
}

// Is matches ErrResourceExhausted.
func (e *ResourceExhaustedError) Is(target error) bool { return target == ErrResourceExhausted }

// Exhaustedf returns a RESOURCE_EXHAUSTED error with no task or node.
func Exhaustedf(format string, args ...any) error {
	return &ResourceExhaustedError{Message: fmt.Sprintf(format, args...)}
}

// CodeError is a plain error with a code (invalid argument, not found,
// unavailable).
type CodeError struct {
	Code    atollpb.ErrorCode
	Message string
}

func (e *CodeError) Error() string { return e.Message }

// Is matches the sentinel of its code (and ErrInvalidArgument for
// MALFORMED, as MalformedError does).
func (e *CodeError) Is(target error) bool {
	return sentinel(e.Code) == target || e.Code == atollpb.ErrorCode_MALFORMED && target == ErrInvalidArgument
}

func sentinel(c atollpb.ErrorCode) error {
	switch c {
	case atollpb.ErrorCode_TASK_ERROR:
		return ErrTask
	case atollpb.ErrorCode_WORKER_CRASHED:
		return ErrWorkerCrashed
	case atollpb.ErrorCode_ACTOR_DIED:
		return ErrActorDied
	case atollpb.ErrorCode_OBJECT_STORE_FULL:
		return ErrObjectStoreFull
	case atollpb.ErrorCode_OBJECT_LOST:
		return ErrObjectLost
	case atollpb.ErrorCode_GET_TIMEOUT:
		return ErrGetTimeout
	case atollpb.ErrorCode_CANCELLED:
		return ErrCancelled
	case atollpb.ErrorCode_OWNER_DIED:
		return ErrOwnerDied
	case atollpb.ErrorCode_INVALID_ARGUMENT:
		return ErrInvalidArgument
	case atollpb.ErrorCode_NOT_FOUND:
		return ErrNotFound
	case atollpb.ErrorCode_UNAVAILABLE:
		return ErrUnavailable
	case atollpb.ErrorCode_NODE_DIED:
		return ErrNodeDied
	case atollpb.ErrorCode_UNSCHEDULABLE:
		return ErrUnschedulable
	case atollpb.ErrorCode_FORWARD_LOST:
		return ErrForwardLost
	case atollpb.ErrorCode_RESOURCE_EXHAUSTED:
		return ErrResourceExhausted
	case atollpb.ErrorCode_PERMISSION_DENIED:
		return ErrPermissionDenied
	case atollpb.ErrorCode_FUNCTION_FAILED:
		return ErrFunctionFailed
	case atollpb.ErrorCode_MALFORMED:
		return ErrMalformed
	}
	return errUnknownErrorCode
}

// Invalidf returns an INVALID_ARGUMENT error.
func Invalidf(format string, args ...any) error {
	return &CodeError{Code: atollpb.ErrorCode_INVALID_ARGUMENT, Message: "atoll: " + fmt.Sprintf(format, args...)}
}

// NotFoundf returns a NOT_FOUND error.
func NotFoundf(format string, args ...any) error {
	return &CodeError{Code: atollpb.ErrorCode_NOT_FOUND, Message: "atoll: " + fmt.Sprintf(format, args...)}
}

// Unauthenticatedf returns an error matching ErrUnauthenticated.
func Unauthenticatedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnauthenticated, fmt.Sprintf(format, args...))
}

// PermissionDeniedf returns a PERMISSION_DENIED error.
func PermissionDeniedf(format string, args ...any) error {
	return &CodeError{Code: atollpb.ErrorCode_PERMISSION_DENIED, Message: "atoll: " + fmt.Sprintf(format, args...)}
}

// Unavailablef returns an UNAVAILABLE error.
func Unavailablef(format string, args ...any) error {
	return &CodeError{Code: atollpb.ErrorCode_UNAVAILABLE, Message: "atoll: " + fmt.Sprintf(format, args...)}
}
