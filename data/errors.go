package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Errors. A dataset's plan is checked when it runs, before anything is
// submitted: a bad argument (Limit(-1), a nil function, an empty column
// name...) matches atoll.ErrInvalidArgument. What fails in a task comes
// back as the task's atoll.TaskError, and errors.As and errors.Is see
// through it, wherever the task ran, to the errors below: a FunctionError
// when a registered function returned an error or panicked (the
// function's own errors of types registered with atoll.RegisterError are
// found too), a ColumnError when an operation names a column the data
// lacks or cannot handle, a SchemaError when blocks that must share a
// schema do not, a FileError when a file does not read or write, a
// NotRegisteredError when the worker's binary lacks a function, and a
// MalformedError when a task's spec or a block does not decode.

type (
	// FunctionError: a registered function returned an error or panicked
	// (Panicked). Func is its name, Op the operation (map, filter,
	// flat_map, map_batches, add_column; setup for a BatchClass's setup),
	// Message its error's text or the panic's value. It matches
	// ErrFunctionFailed.
	FunctionError = errs.FunctionError
	// MalformedError: a task's spec, its metadata or a block did not
	// decode (corrupt, or from a binary of another version). It matches
	// ErrMalformed and atoll.ErrInvalidArgument.
	MalformedError = errs.MalformedError
	// NotRegisteredError: the binary running an operation has no
	// function of the name and sort (Kind: "data row function", "data
	// batch class"...) the operation uses: it was registered after
	// atoll.Init, or the worker runs another binary. It matches
	// atoll.ErrNotFound.
	NotRegisteredError = errs.NotRegisteredError
)

var (
	// ErrFunctionFailed matches every FunctionError.
	ErrFunctionFailed = errs.ErrFunctionFailed
	// ErrMalformed matches every MalformedError.
	ErrMalformed = errs.ErrMalformed
)

// ColumnError: an operation (Op: Select, Sort, GroupBy, an aggregation
// such as sum...) names a column the data does not have (Type is empty
// and Columns lists those it has), or one whose type it does not handle
// (Type is the column's Arrow type, Supported the types it handles). It
// matches atoll.ErrInvalidArgument.
type ColumnError struct {
	Op        string
	Column    string
	Columns   []string
	Type      string
	Supported string
}

func (e *ColumnError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("data: no column %q (columns: %s)", e.Column, strings.Join(e.Columns, ", "))
	}
	return fmt.Sprintf("data: %s of column %q of type %s is not supported (%s)", e.Op, e.Column, e.Type, e.Supported)
}

// Is matches atoll.ErrInvalidArgument.
func (e *ColumnError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// SchemaError: blocks or datasets that must share a schema do not (What
// says which: a Union's datasets, a task's input blocks); A and B are
// two schemas that differ. It matches atoll.ErrInvalidArgument.
type SchemaError struct {
	What string
	A, B string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("data: %s of different schemas: %s and %s", e.What, e.A, e.B)
}

// Is matches atoll.ErrInvalidArgument.
func (e *SchemaError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// schemaLine is a schema on one line, for a SchemaError: "id int64, name
// utf8" (a column that cannot be null says so).
func schemaLine(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = f.Name + " " + f.Type.String()
		if !f.Nullable {
			parts[i] += " not null"
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// FileError: a task could not read or write (Op) the file Path; Message
// is the cause's text. It matches fs.ErrNotExist and fs.ErrPermission
// when its cause did, and ErrTransient when Transient, in the caller too;
// in the process that failed, Unwrap returns the cause.
type FileError struct {
	Op         string
	Path       string
	Message    string
	NotExist   bool
	Permission bool
	// Transient: the cause may pass if the file is tried again (see
	// ErrTransient).
	Transient bool
	err       error
}

// ErrTransient matches a FileError whose cause may pass if the file is
// tried again: an I/O error (EIO), a timeout, an interrupted or refused
// call (EINTR, EAGAIN, EBUSY), a stale network file handle (ESTALE), a
// dropped connection. A read task is retried on these (three times), and
// on nothing else its own code returns: a file that does not parse, or
// does not fit the read's schema, fails the dataset at once.
var ErrTransient = errors.New("data: the file may read if tried again")

// transientCauses are the system errors ErrTransient stands for.
var transientCauses = []error{syscall.EIO, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY, syscall.ETIMEDOUT, syscall.ESTALE,
	syscall.ECONNRESET, syscall.ECONNABORTED, syscall.ENETDOWN, syscall.ENETUNREACH, syscall.EHOSTUNREACH, os.ErrDeadlineExceeded}

func transient(err error) bool {
	for _, c := range transientCauses {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

// maxFileMessage bounds a FileError's message, so that it travels whole.
const maxFileMessage = 8 << 10

func fileError(op, path string, err error) *FileError {
	msg := err.Error()
	if len(msg) > maxFileMessage {
		msg = msg[:maxFileMessage] + "..."
	}
	return &FileError{Op: op, Path: path, Message: msg, NotExist: errors.Is(err, fs.ErrNotExist),
		Permission: errors.Is(err, fs.ErrPermission), Transient: transient(err), err: err}
}

func (e *FileError) Error() string { return "data: " + e.Op + " " + e.Path + ": " + e.Message }

// Is matches fs.ErrNotExist and fs.ErrPermission when the cause did, and
// ErrTransient when Transient.
func (e *FileError) Is(target error) bool {
	return target == fs.ErrNotExist && e.NotExist || target == fs.ErrPermission && e.Permission ||
		target == ErrTransient && e.Transient
}

// Unwrap returns the cause, in the process that failed.
func (e *FileError) Unwrap() error { return e.err }

// The errors travel from tasks as themselves.
func init() {
	for _, t := range []reflect.Type{reflect.TypeFor[*ColumnError](), reflect.TypeFor[*SchemaError](), reflect.TypeFor[*FileError]()} {
		if err := errs.RegisterType(t); err != nil {
			panic(err)
		}
	}
	if err := errs.RegisterSentinel(ErrTransient); err != nil {
		panic(err)
	}
}
