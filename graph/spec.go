package graph

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/atoll-runtime/atoll"
)

// Key names a value in a graph. Dask's tuple keys ("x", 3) are written
// with TupleKey.
type Key string

// TupleKey returns the key Dask writes as the tuple (name, index...):
// TupleKey("x", 3, 1) == Key("('x', 3, 1)").
func TupleKey(name string, index ...int) Key {
	var b strings.Builder
	b.WriteString("('")
	b.WriteString(name)
	b.WriteByte('\'')
	if len(index) == 0 {
		b.WriteByte(',')
	}
	for _, i := range index {
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteByte(')')
	return Key(b.String())
}

// Expr is the value of a key, or an argument of a task: a Task (Call), a
// reference to another key (Ref), a literal (Lit), a list (List), an
// object already in the store (Object), one element of a slice value
// (Item), or, as a key's whole value only, a task with several returns
// (MultiReturn). The set is closed.
type Expr interface {
	isExpr()
	String() string
}

// Task is a call of a function registered with Register. Its arguments
// are evaluated first; nested tasks run inside the same atoll task.
type Task struct {
	Func string
	Args []Expr
}

// Call returns the task fn(args...).
func Call(fn string, args ...Expr) Task { return Task{Func: fn, Args: args} }

func (Task) isExpr() {}

func (t Task) String() string {
	parts := make([]string, len(t.Args))
	for i, a := range t.Args {
		parts[i] = exprString(a)
	}
	return t.Func + "(" + strings.Join(parts, ", ") + ")"
}

type refExpr struct{ key Key }

// Ref is the value of another key. As a key's whole value it makes the
// key an alias.
func Ref(k Key) Expr { return refExpr{k} }

func (refExpr) isExpr()          {}
func (r refExpr) String() string { return "Ref(" + strconv.Quote(string(r.key)) + ")" }

type litExpr struct{ v any }

// Lit is a literal Go value. It travels with the task that uses it,
// encoded by atoll's codec (raw numeric slices, protobuf messages, gob
// for everything else), and is decoded as the parameter's type.
func Lit(v any) Expr { return litExpr{v} }

func (litExpr) isExpr() {}
func (l litExpr) String() string {
	s := fmt.Sprintf("%v", l.v)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return fmt.Sprintf("Lit(%T %s)", l.v, s)
}

type listExpr struct{ items []Expr }

// List is a list of values, passed as a slice to a parameter of slice
// type. As the last argument of a call to a variadic function with one
// argument per parameter, it is the variadic tail (f(xs...)). As a key's
// whole value, Compute returns its items' values as a []any.
func List(items ...Expr) Expr { return listExpr{items} }

func (listExpr) isExpr() {}
func (l listExpr) String() string {
	parts := make([]string, len(l.items))
	for i, a := range l.items {
		parts[i] = exprString(a)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

type objectExpr struct {
	ref atoll.Ref
	t   reflect.Type
}

// Object is a value already in the object store, holding a value of type
// t: what Persist puts in the graphs it returns, or any ref of your own.
// The graph keeps the object alive while it holds the expression.
func Object(ref atoll.Ref, t reflect.Type) Expr { return objectExpr{ref, t} }

func (objectExpr) isExpr() {}
func (o objectExpr) String() string {
	if o.ref == nil {
		return "Object(nil)"
	}
	return fmt.Sprintf("Object(%s %v)", o.ref.ID(), o.t)
}

type itemExpr struct {
	of    Expr
	index int
}

// Item is element i of a slice value: of a task's result, or of one
// output of a MultiReturn key (Item(Ref(k), i), which reads only that
// output).
func Item(of Expr, i int) Expr { return itemExpr{of, i} }

func (itemExpr) isExpr() {}
func (it itemExpr) String() string {
	return fmt.Sprintf("Item(%s, %d)", exprString(it.of), it.index)
}

type multiExpr struct {
	task Task
	n    int
}

// MultiReturn, as a key's whole value, is a task whose function returns a
// slice of n elements, each stored as its own object (atoll's multiple
// returns): Item(Ref(k), i) reads output i alone. A shuffle's map tasks
// are written this way (see Shuffle).
func MultiReturn(t Task, n int) Expr { return multiExpr{t, n} }

func (multiExpr) isExpr() {}
func (m multiExpr) String() string {
	return fmt.Sprintf("MultiReturn(%s, %d)", m.task.String(), m.n)
}

func exprString(e Expr) string {
	if e == nil {
		return "<nil>"
	}
	return e.String()
}

// Graph maps keys to their values.
type Graph map[Key]Expr

// Deps returns the keys e refers to, in order of first appearance.
func Deps(e Expr) []Key {
	var out []Key
	seen := map[Key]bool{}
	walkRefs(e, func(k Key) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	})
	return out
}

// walkRefs calls fn for every Ref inside e, in order, with repeats.
func walkRefs(e Expr, fn func(Key)) {
	switch x := e.(type) {
	case refExpr:
		fn(x.key)
	case Task:
		for _, a := range x.Args {
			walkRefs(a, fn)
		}
	case listExpr:
		for _, a := range x.items {
			walkRefs(a, fn)
		}
	case itemExpr:
		walkRefs(x.of, fn)
	case multiExpr:
		walkRefs(x.task, fn)
	}
}

// Copy returns a shallow copy of g (expressions are immutable values).
func (g Graph) Copy() Graph {
	out := make(Graph, len(g))
	for k, v := range g {
		out[k] = v
	}
	return out
}
