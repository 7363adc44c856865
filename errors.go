package atoll

import "github.com/atoll-runtime/atoll/internal/errs"

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
	// ObjectStoreFullError: a creation found no space in time.
	ObjectStoreFullError = errs.ObjectStoreFullError
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
