package graph

import (
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// The task spec the driver sends to graph.exec as its first argument is
// an atollpb.GraphTask: the (fused) expression with references replaced
// by dependency slots, how to decode each dependency, and the task
// callbacks to run. A worker checks it whole before it evaluates
// anything (checkTask): a spec that fails fails the task with a
// MalformedError.

// specWhat names the spec in its MalformedErrors.
const specWhat = "graph task spec"

// Bounds on a spec from the wire, beyond its size (the message's bytes
// are in memory already): nothing in it may make a worker loop or
// allocate more than the bytes warrant.
const (
	// maxExprDepth bounds the nesting of expressions (protobuf's own
	// recursion limit is the same).
	maxExprDepth = 10000
	// maxDepDepth bounds GraphDep.depth (Item of Item of ...).
	maxDepDepth = 1 << 10
	// maxReturns bounds a MultiReturn task's outputs.
	maxReturns = 1 << 20
	// maxName bounds function, callback and key names.
	maxName = 64 << 10
)

// encodeTask marshals a task spec.
func encodeTask(t *atollpb.GraphTask) ([]byte, error) {
	b, err := proto.Marshal(t)
	if err != nil {
		return nil, errs.Invalidf("graph: encode the spec of key %q: %v", t.GetKey(), err)
	}
	return b, nil
}

// decodeTask unmarshals and checks a task spec for a task of deps
// dependencies; multi says whether it runs as a MultiReturn task.
func decodeTask(b []byte, deps int, multi bool) (*atollpb.GraphTask, error) {
	t := &atollpb.GraphTask{}
	if err := (proto.UnmarshalOptions{RecursionLimit: maxExprDepth + 8}).Unmarshal(b, t); err != nil {
		return nil, errs.Malformedf(specWhat, "%v", err)
	}
	if err := checkTask(t, deps, multi); err != nil {
		return nil, err
	}
	return t, nil
}

// checkTask checks everything a worker relies on in t: counts against
// the task's arguments, every slot and index, names and kinds.
func checkTask(t *atollpb.GraphTask, deps int, multi bool) error {
	bad := func(format string, args ...any) error {
		return errs.Malformedf(specWhat, "key %q: "+format, append([]any{clipName(t.GetKey())}, args...)...)
	}
	switch {
	case len(t.Key) > maxName:
		return bad("a key of %d bytes", len(t.Key))
	case len(t.Deps) != deps:
		return bad("%d dependencies passed, the spec names %d", deps, len(t.Deps))
	case multi != (t.NumReturns > 0):
		return bad("%d returns for a task run as MultiReturn=%v", t.NumReturns, multi)
	case t.NumReturns > maxReturns:
		return bad("%d returns, over the limit of %d", t.NumReturns, maxReturns)
	case t.Expr == nil:
		return bad("no expression")
	}
	for i, d := range t.Deps {
		if d == nil || len(d.Func) > maxName || d.Depth > maxDepDepth || d.Func == "" && d.Depth > 0 {
			return bad("dependency %d: %v", i, d)
		}
	}
	for i, c := range t.Callbacks {
		if c == nil || c.Name == "" || len(c.Name) > maxName {
			return bad("task callback %d has no name", i)
		}
	}
	return checkExpr(t.Expr, len(t.Deps), 0, bad)
}

func checkExpr(e *atollpb.GraphExpr, deps, depth int, bad func(string, ...any) error) error {
	if e == nil {
		return bad("a nil expression")
	}
	if depth > maxExprDepth {
		return bad("expressions nested deeper than %d", maxExprDepth)
	}
	switch e.Kind {
	case atollpb.GraphExpr_CALL:
		if e.Func == "" || len(e.Func) > maxName {
			return bad("a call of a function with a name of %d bytes", len(e.Func))
		}
		if e.Spread && len(e.Args) == 0 {
			return bad("call of %s: a variadic tail and no argument", e.Func)
		}
	case atollpb.GraphExpr_DEP:
		if int(e.Index) >= deps {
			return bad("dependency slot %d of %d", e.Index, deps)
		}
		return nil
	case atollpb.GraphExpr_LITERAL:
		if _, ok := atollpb.Codec_name[int32(e.Codec)]; !ok || e.Codec == atollpb.Codec_CODEC_UNSPECIFIED || e.Codec == atollpb.Codec_CODEC_ERROR {
			return bad("a literal of codec %d", e.Codec)
		}
		return nil
	case atollpb.GraphExpr_LIST:
	case atollpb.GraphExpr_ITEM:
		if len(e.Args) != 1 {
			return bad("Item of %d values", len(e.Args))
		}
	default:
		return bad("unknown expression kind %d", e.Kind)
	}
	for _, a := range e.Args {
		if err := checkExpr(a, deps, depth+1, bad); err != nil {
			return err
		}
	}
	return nil
}

// clipName bounds a name from the wire quoted in an error.
func clipName(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}
