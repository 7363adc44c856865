package atoll

import (
	"fmt"
	"reflect"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Typed errors. Test with errors.Is against the sentinels, or extract the
// details with errors.As. Each type has a stable code on the wire
// (atollpb.ErrorCode).
type (
	// TaskError is a task's or method's own failure: it returned an error
	// or panicked (Message, RemoteStack). Unwrap leads to the values of the
	// error types and sentinels registered with RegisterError that the
	// task's error held, wherever the task ran.
	TaskError = errs.TaskError
	// WorkerCrashedError: the worker died running the task and retries ran
	// out.
	WorkerCrashedError = errs.WorkerCrashedError
	// ActorDiedError: the actor is dead (killed, restarts exhausted, or its
	// constructor failed).
	ActorDiedError = errs.ActorDiedError
	// ObjectStoreFullError: a creation, or the restore of a spilled object
	// for a Get, found no space in time; Resource says whether memory or
	// the spill disk ran out.
	ObjectStoreFullError = errs.ObjectStoreFullError
	// StoreResource is what a full object store ran out of (StoreMemory,
	// StoreDisk).
	StoreResource = errs.StoreResource
	// ObjectLostError: the object's value is gone.
	ObjectLostError = errs.ObjectLostError
	// ObjectReconstructionFailedError: every copy of an object was lost
	// and its lineage cannot rebuild it (a Put object, lineage not kept or
	// evicted, an argument freed); Reason says why. It matches
	// ErrObjectLost too.
	ObjectReconstructionFailedError = errs.ObjectReconstructionFailedError
	// GetTimeoutError: a Get's context deadline passed first; it also
	// matches context.DeadlineExceeded.
	GetTimeoutError = errs.GetTimeoutError
	// CancelledError: the task was cancelled; it also matches
	// context.Canceled.
	CancelledError = errs.CancelledError
	// OwnerDiedError: the process owning the object died.
	OwnerDiedError = errs.OwnerDiedError
	// NodeDiedError: the node running the task, or holding the actor,
	// died and retries ran out.
	NodeDiedError = errs.NodeDiedError
	// UnschedulableError: no node can run the task under its scheduling
	// strategy (a hard node affinity to a dead or unknown node).
	UnschedulableError = errs.UnschedulableError
	// ForwardLostError: work forwarded to another node was lost in
	// transit (that node stopped confirming it within the forwarding
	// lease) and retries ran out.
	ForwardLostError = errs.ForwardLostError
	// ResourceExhaustedError: a bound on state other nodes can grow was
	// reached: the node the task was forwarded to already holds its quota
	// of work from the submitting node (or its overall cap), or the GCS
	// refused a new entry past a table's cap or its store's size. Not
	// retried.
	ResourceExhaustedError = errs.ResourceExhaustedError
)

// What a full object store ran out of (ObjectStoreFullError.Resource).
const (
	// StoreMemory: the store's memory, with nothing in it that can be
	// spilled (pinned, being written, or spilling is off).
	StoreMemory = errs.StoreMemory
	// StoreDisk: the spill directories' disk, while objects in memory
	// wait to be spilled there: full, or failing the writes (the error's
	// message then gives the latest write's error).
	StoreDisk = errs.StoreDisk
)

// Sentinels for errors.Is.
var (
	ErrTask            = errs.ErrTask
	ErrWorkerCrashed   = errs.ErrWorkerCrashed
	ErrActorDied       = errs.ErrActorDied
	ErrObjectStoreFull = errs.ErrObjectStoreFull
	ErrObjectLost      = errs.ErrObjectLost
	// ErrObjectReconstructionFailed: lost, and its lineage cannot rebuild
	// it.
	ErrObjectReconstructionFailed = errs.ErrObjectReconstructionFailed
	ErrGetTimeout                 = errs.ErrGetTimeout
	ErrCancelled                  = errs.ErrCancelled
	// ErrCancelNonRecursive is the cause (context.Cause) of a task's
	// context when the task alone was cancelled (Cancel with NonRecursive).
	ErrCancelNonRecursive = errs.ErrCancelNonRecursive
	ErrOwnerDied          = errs.ErrOwnerDied
	ErrInvalidArgument    = errs.ErrInvalidArgument
	ErrNotFound           = errs.ErrNotFound
	ErrNodeDied           = errs.ErrNodeDied
	ErrUnschedulable      = errs.ErrUnschedulable
	ErrForwardLost        = errs.ErrForwardLost
	// ErrResourceExhausted: a node's quota of forwarded work, or a GCS
	// table's cap, was reached.
	ErrResourceExhausted = errs.ErrResourceExhausted
	// ErrUnavailable: atoll is not running (ErrNotInitialized) or shutting
	// down.
	ErrUnavailable    = errs.ErrUnavailable
	ErrNotInitialized = errs.ErrNotInitialized
	ErrAlreadyStarted = errs.ErrAlreadyStarted
	// ErrUnauthenticated: the cluster refused this process's cluster
	// secret, or none was found (ATOLL_SECRET, ATOLL_SECRET_FILE,
	// WithSecret, or the head's secret file on its machine).
	ErrUnauthenticated = errs.ErrUnauthenticated
	// ErrPermissionDenied: the cluster authenticated this process but its
	// credentials do not allow the request: a read-only (reader)
	// credential asked for a change, or fault injection (KillNode,
	// PartitionNode, a plan's kill-node or partition) was asked of a
	// cluster whose head was started without --fault-injection.
	ErrPermissionDenied = errs.ErrPermissionDenied
)

// RegisterError makes a task's errors come back to its caller as
// themselves, so errors.As and errors.Is work across processes and nodes
// (in either worker mode: errors take the same path). Register
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
