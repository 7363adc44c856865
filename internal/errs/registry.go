package errs

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/registry"
)

// Bounds on what a task's error may carry across processes. The sending
// side truncates to them; the receiving side enforces them again, since
// the error comes from a peer.
const (
	// MaxMessage bounds a task error's message, in bytes.
	MaxMessage = 16 << 10
	// MaxStack bounds a task error's remote stack, in bytes.
	MaxStack = 64 << 10
	// MaxRegisteredValue bounds one encoded value of a registered error
	// type, in bytes; a larger one travels as its message only.
	MaxRegisteredValue = 64 << 10
	// MaxRegisteredValues bounds the registered values one error carries.
	MaxRegisteredValues = 8
	// MaxSentinels bounds the registered sentinels one error names.
	MaxSentinels = 32
	// maxChain bounds the errors visited along an Unwrap chain (a tree,
	// with errors.Join).
	maxChain = 64
	// maxTypeName bounds a type or sentinel name on the wire.
	maxTypeName = 1 << 10
)

// The error types and sentinels the program registered are two kinds of
// the program's registry (registry.ErrorTypes, registry.Sentinels). Every
// process of the same binary registers the same ones at package init, so
// a name means the same thing on both sides.

// registeredType returns the registered error type t and its name, if t
// is one.
func registeredType(t reflect.Type) (string, *registry.ErrorType) {
	name := TypeName(t)
	if et, ok := registry.ErrorTypes.Lookup(name); ok && et.Type == t {
		return name, et
	}
	return "", nil
}

// TypeName is the name a registered error type travels under: its
// package path and name, with a leading * for a pointer type.
func TypeName(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	if t.Kind() == reflect.Pointer && t.Name() == "" {
		return "*" + TypeName(t.Elem())
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

var errorInterface = reflect.TypeFor[error]()

// RegisterType registers the error type t, so that a task's error of that
// type (anywhere along its Unwrap chain) comes back to the caller as
// itself. t must be a named type implementing error whose exported fields
// gob can encode (or a struct with no fields at all). Registering a type
// twice is a no-op.
func RegisterType(t reflect.Type) error {
	if t == nil || t.Kind() == reflect.Interface {
		return Invalidf("RegisterError: give a concrete error type, as in RegisterError[*MyError](); to register a sentinel error value, pass it: RegisterError(ErrMySentinel)")
	}
	if !t.Implements(errorInterface) {
		return Invalidf("RegisterError: %v does not implement error (is Error defined on the pointer? then register *%v)", t, t)
	}
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Name() == "" {
		return Invalidf("RegisterError: %v is not a named type: declare the error type and register it by name", t)
	}
	et := &registry.ErrorType{Type: t, Empty: base.Kind() == reflect.Struct && base.NumField() == 0}
	if !et.Empty {
		// Encode a zero value now, so a type gob cannot handle fails at
		// package init instead of when a task fails.
		if _, err := encodeValue(reflect.New(base).Interface()); err != nil {
			return Invalidf("RegisterError: %v cannot travel between processes: %v (export its fields, or implement GobEncode and GobDecode)", t, err)
		}
	}
	name := TypeName(t)
	err := registry.ErrorTypes.Add(name, et)
	if dup, ok := err.(*registry.DuplicateError); ok {
		if dup.Existing.(*registry.ErrorType).Type == t {
			return nil
		}
		return Invalidf("RegisterError: two error types are named %s", name)
	}
	return err
}

// RegisterSentinel registers a sentinel error value, so that
// errors.Is(err, sentinel) holds on the caller's side when a task's error
// matched it. Sentinels are known by their message, which must be unique
// among registered sentinels; registering the same value twice is a
// no-op.
func RegisterSentinel(err error) error {
	if err == nil {
		return Invalidf("RegisterError: nil sentinel")
	}
	name := err.Error()
	if name == "" || len(name) > maxTypeName {
		return Invalidf("RegisterError: a sentinel's message names it across processes: it must be 1 to %d bytes, not %d", maxTypeName, len(name))
	}
	aerr := registry.Sentinels.Add(name, err)
	if dup, ok := aerr.(*registry.DuplicateError); ok {
		if same(dup.Existing.(error), err) {
			return nil
		}
		return Invalidf("RegisterError: two sentinel errors say %q: give them different messages", name)
	}
	return aerr
}

// same compares two errors without panicking on uncomparable types.
func same(a, b error) bool {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	return a == b
}

// encodeValue gob-encodes v.
func encodeValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plainWrapper marks atoll's own wrappers along a chain (TaskError,
// remoteCause, atoll.Errorf's error): they carry nothing to register.
type plainWrapper interface{ plainWrapper() }

func (*TaskError) plainWrapper()   {}
func (*remoteCause) plainWrapper() {}

// plainTypes are the standard library's wrappers and leaves: nothing to
// register (a sentinel made by errors.New registers as a value).
var plainTypes = map[string]bool{
	"*errors.errorString": true, "*fmt.wrapError": true, "*fmt.wrapErrors": true, "*errors.joinError": true,
}

// ownTypes are atoll's typed errors.
var ownTypes = map[reflect.Type]bool{
	reflect.TypeFor[*WorkerCrashedError](): true, reflect.TypeFor[*ActorDiedError](): true, reflect.TypeFor[*ObjectStoreFullError](): true,
	reflect.TypeFor[*ObjectLostError](): true, reflect.TypeFor[*ObjectReconstructionFailedError](): true, reflect.TypeFor[*GetTimeoutError](): true,
	reflect.TypeFor[*CancelledError](): true, reflect.TypeFor[*OwnerDiedError](): true, reflect.TypeFor[*NodeDiedError](): true,
	reflect.TypeFor[*UnschedulableError](): true, reflect.TypeFor[*ForwardLostError](): true, reflect.TypeFor[*ResourceExhaustedError](): true,
	reflect.TypeFor[*CodeError](): true,
}

// encodeCause fills info's registered values, sentinels and types from a
// task's own error.
func encodeCause(cause error, info *atollpb.ErrorInfo) {
	if cause == nil {
		return
	}
	defer func() {
		// The program's Unwrap, Is or GobEncode panicked: the error
		// travels with what was encoded so far, and its message.
		if r := recover(); r != nil {
			slog.Warn("atoll: encoding a task's error panicked; it travels as its message", "task", info.TaskName, "panic", fmt.Sprint(r))
		}
	}()
	if _, remote := cause.(*remoteCause); !remote && info.ErrorType == "" {
		info.ErrorType = reflect.TypeOf(cause).String()
	}
	visited := 0
	queue := []error{cause}
	for len(queue) > 0 && visited < maxChain {
		e := queue[0]
		queue = queue[1:]
		if e == nil {
			continue
		}
		visited++
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			queue = append(queue, u.Unwrap())
		case interface{ Unwrap() []error }:
			queue = append(queue, u.Unwrap()...)
		}
		t := reflect.TypeOf(e)
		if name, et := registeredType(t); et != nil {
			if len(info.Registered) >= MaxRegisteredValues {
				continue
			}
			var data []byte
			if !et.Empty {
				var err error
				if data, err = encodeValue(e); err != nil || len(data) > MaxRegisteredValue {
					if err == nil {
						err = fmt.Errorf("%d bytes encoded, over the limit of %d", len(data), MaxRegisteredValue)
					}
					if info.UnregisteredType == "" {
						info.UnregisteredType = fmt.Sprintf("%s (registered, but not encodable: %v)", name, err)
					}
					continue
				}
			}
			info.Registered = append(info.Registered, &atollpb.RegisteredError{Type: name, Gob: data})
			continue
		}
		if _, ok := e.(plainWrapper); ok || plainTypes[t.String()] || info.UnregisteredType != "" || isSentinel(e) {
			continue
		}
		if ownTypes[t] {
			continue // atoll's own typed errors: their codes say what they are
		}
		info.UnregisteredType = TypeName(t)
	}
	registry.Sentinels.All(func(name string, s error) bool {
		if len(info.Sentinels) >= MaxSentinels {
			return false
		}
		if errors.Is(cause, s) {
			info.Sentinels = append(info.Sentinels, name)
		}
		return true
	})
}

// isSentinel reports whether e is a registered sentinel value.
func isSentinel(e error) bool {
	_, ok := SentinelName(e)
	return ok
}

// RetryName is the name e travels under for RetryExceptions: a
// registered sentinel's (its message), or, for a value of a registered
// error type, the type's (TypeName), which stands for every error of
// that type; false for anything else.
func RetryName(e error) (string, bool) {
	if name, ok := SentinelName(e); ok {
		return name, true
	}
	if e == nil {
		return "", false
	}
	name, et := registeredType(reflect.TypeOf(e))
	return name, et != nil
}

// SentinelName returns the name e is registered under as a sentinel (its
// message), and whether it is one.
func SentinelName(e error) (string, bool) {
	if e == nil {
		return "", false
	}
	name := e.Error()
	s, ok := registry.Sentinels.Lookup(name)
	return name, ok && same(s, e)
}

// decodeCause rebuilds a task's own error from info: its registered
// values and sentinels, with its message. It returns nil when nothing of
// it was registered on either side. What a peer sent is bounded and
// checked: unknown names and undecodable values are dropped with a log
// line, and the error keeps its message.
func decodeCause(info *atollpb.ErrorInfo, msg string) error {
	if len(info.Registered) == 0 && len(info.Sentinels) == 0 {
		return nil
	}
	c := &remoteCause{msg: msg}
	for i, r := range info.Registered {
		if i >= MaxRegisteredValues {
			slog.Warn("atoll: task error carries too many registered values; the rest are dropped", "task", info.TaskName, "values", len(info.Registered), "limit", MaxRegisteredValues)
			break
		}
		et, ok := registry.ErrorTypes.Lookup(r.Type)
		if !ok {
			slog.Warn("atoll: task error of a type this process did not register; it keeps its message only (register it with atoll.RegisterError in every binary)",
				"task", info.TaskName, "type", clip(r.Type, maxTypeName))
			continue
		}
		if len(r.Gob) > MaxRegisteredValue {
			slog.Warn("atoll: task error value over the size limit dropped", "task", info.TaskName, "type", r.Type, "bytes", len(r.Gob), "limit", MaxRegisteredValue)
			continue
		}
		v, err := decodeValue(et, r.Gob)
		if err != nil {
			slog.Warn("atoll: undecodable task error value dropped", "task", info.TaskName, "type", r.Type, "err", err)
			continue
		}
		c.values = append(c.values, v)
	}
	for i, name := range info.Sentinels {
		if i >= MaxSentinels {
			break
		}
		if s, ok := registry.Sentinels.Lookup(name); ok {
			c.values = append(c.values, s)
		}
	}
	if len(c.values) == 0 {
		return nil
	}
	return c
}

// decodeValue rebuilds a value of the registered type et from its gob
// encoding.
func decodeValue(et *registry.ErrorType, data []byte) (error, error) {
	ptr := et.Type.Kind() == reflect.Pointer
	base := et.Type
	if ptr {
		base = base.Elem()
	}
	v := reflect.New(base)
	if !et.Empty {
		if err := gob.NewDecoder(bytes.NewReader(data)).DecodeValue(v); err != nil {
			return nil, err
		}
	}
	if !ptr {
		v = v.Elem()
	}
	e, ok := v.Interface().(error)
	if !ok {
		return nil, fmt.Errorf("%s does not implement error", TypeName(et.Type))
	}
	return e, nil
}

// remoteCause is a task's own error as it came back from another
// process (or through the wire form in this one): its message, and the
// registered values and sentinels it held, which errors.As and errors.Is
// find through Unwrap.
type remoteCause struct {
	msg    string
	values []error
}

func (c *remoteCause) Error() string   { return c.msg }
func (c *remoteCause) Unwrap() []error { return c.values }

// clip bounds a string from a peer to n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... [%d bytes cut]", len(s)-n)
}
