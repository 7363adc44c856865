package graph

import (
	"fmt"
	"reflect"
	"slices"
)

func typeName(t reflect.Type) string {
	if t == nil {
		return "nothing"
	}
	return t.String()
}

// Validate checks g: every key that keys need (every key of g if none are
// given) exists, there is no cycle, every function is registered and
// every argument fits its parameter. Errors are *CycleError,
// *MissingKeyError, *UnregisteredFuncError and *ArgTypeError, each
// matching atoll.ErrInvalidArgument.
func Validate(g Graph, keys ...Key) error {
	_, err := check(g, keys)
	return err
}

// checked is a validated graph: the keys the roots need, in topological
// order (dependencies first), and the static type of each.
type checked struct {
	g     Graph
	order []Key
	types map[Key]reflect.Type
}

func check(g Graph, roots []Key) (*checked, error) {
	if len(roots) == 0 {
		for k := range g {
			roots = append(roots, k)
		}
		slices.Sort(roots)
	}
	c := &checked{g: hoistLists(g), types: make(map[Key]reflect.Type, len(g))}
	if err := c.topo(roots); err != nil {
		return nil, err
	}
	for _, k := range c.order {
		if err := c.typeKey(k); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// topo orders the keys roots need, dependencies first, finding missing
// keys and cycles.
func (c *checked) topo(roots []Key) error {
	const (
		visiting = 1
		done     = 2
	)
	state := make(map[Key]int, len(c.g))
	var stack []Key
	var visit func(k, from Key) error
	visit = func(k, from Key) error {
		switch state[k] {
		case done:
			return nil
		case visiting:
			i := slices.Index(stack, k)
			return &CycleError{Keys: slices.Clone(stack[i:])}
		}
		e, ok := c.g[k]
		if !ok {
			return &MissingKeyError{Key: k, From: from}
		}
		state[k] = visiting
		stack = append(stack, k)
		for _, d := range Deps(e) {
			if err := visit(d, k); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[k] = done
		c.order = append(c.order, k)
		return nil
	}
	for _, r := range roots {
		if err := visit(r, ""); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows aliases from k to the key holding a value that is not
// a Ref.
func (c *checked) resolve(k Key) (Key, Expr) {
	for {
		e := c.g[k]
		r, ok := e.(refExpr)
		if !ok {
			return k, e
		}
		k = r.key
	}
}

// typeKey computes the static type of key k; its dependencies are typed
// already (topological order).
func (c *checked) typeKey(k Key) error {
	var t reflect.Type
	var err error
	switch x := c.g[k].(type) {
	case nil:
		return &ArgTypeError{Key: k, Index: -1, Reason: "the key's value is nil"}
	case refExpr:
		tk, te := c.resolve(x.key)
		if _, multi := te.(multiExpr); multi {
			return &ArgTypeError{Key: k, Index: -1, Reason: fmt.Sprintf("an alias of MultiReturn key %q: read its outputs with Item", tk)}
		}
		t = c.types[tk]
	case multiExpr:
		if x.n < 1 {
			return &ArgTypeError{Key: k, Func: x.task.Func, Index: -1, Reason: fmt.Sprintf("MultiReturn of %d outputs", x.n)}
		}
		if t, err = c.exprType(k, x.task); err != nil {
			return err
		}
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return &ArgTypeError{Key: k, Func: x.task.Func, Index: -1, Got: t, Reason: "a MultiReturn task must return a slice"}
		}
	case listExpr:
		// A list key is inlined where it is used; its own type matters
		// only to Compute, which returns []any.
		for _, it := range x.items {
			if _, err := c.exprType(k, it); err != nil {
				return err
			}
		}
		t = reflect.TypeFor[[]any]()
	default:
		if t, err = c.exprType(k, x); err != nil {
			return err
		}
	}
	c.types[k] = t
	return nil
}

// exprType returns the static type of e, an expression inside key k's
// value, checking it.
func (c *checked) exprType(k Key, e Expr) (reflect.Type, error) {
	switch x := e.(type) {
	case Task:
		return c.taskType(k, x)
	case refExpr:
		tk, te := c.resolve(x.key)
		if _, multi := te.(multiExpr); multi {
			return nil, &ArgTypeError{Key: k, Index: -1, Reason: fmt.Sprintf("Ref of MultiReturn key %q: read its outputs with Item", tk)}
		}
		return c.types[tk], nil
	case litExpr:
		if x.v == nil {
			return nil, &ArgTypeError{Key: k, Index: -1, Reason: "Lit(nil) has no type"}
		}
		return reflect.TypeOf(x.v), nil
	case objectExpr:
		if x.ref == nil || x.t == nil {
			return nil, &ArgTypeError{Key: k, Index: -1, Reason: "Object needs a ref and a type"}
		}
		return x.t, nil
	case listExpr:
		var elem reflect.Type
		for _, it := range x.items {
			t, err := c.exprType(k, it)
			if err != nil {
				return nil, err
			}
			if elem == nil {
				elem = t
			} else if elem != t {
				elem = reflect.TypeFor[any]()
			}
		}
		if elem == nil {
			elem = reflect.TypeFor[any]()
		}
		return reflect.SliceOf(elem), nil
	case itemExpr:
		return c.itemType(k, x)
	case multiExpr:
		return nil, &ArgTypeError{Key: k, Func: x.task.Func, Index: -1, Reason: "MultiReturn is only allowed as a key's whole value"}
	case nil:
		return nil, &ArgTypeError{Key: k, Index: -1, Reason: "nil expression"}
	}
	return nil, &ArgTypeError{Key: k, Index: -1, Reason: fmt.Sprintf("unknown expression %T", e)}
}

func (c *checked) itemType(k Key, it itemExpr) (reflect.Type, error) {
	if it.index < 0 {
		return nil, &ArgTypeError{Key: k, Index: -1, Reason: fmt.Sprintf("Item index %d", it.index)}
	}
	var base reflect.Type
	switch x := it.of.(type) {
	case refExpr:
		tk, te := c.resolve(x.key)
		switch y := te.(type) {
		case multiExpr:
			if it.index >= y.n {
				return nil, &ArgTypeError{Key: k, Index: -1, Reason: fmt.Sprintf("Item %d of MultiReturn key %q with %d outputs", it.index, tk, y.n)}
			}
		case Task, itemExpr:
		default:
			return nil, &ArgTypeError{Key: k, Index: -1, Reason: fmt.Sprintf("Item of key %q: Item reads only values computed by tasks", tk)}
		}
		base = c.types[tk]
	case Task, itemExpr:
		t, err := c.exprType(k, x)
		if err != nil {
			return nil, err
		}
		base = t
	default:
		return nil, &ArgTypeError{Key: k, Index: -1, Reason: "Item reads only values computed by tasks"}
	}
	if base.Kind() != reflect.Slice && base.Kind() != reflect.Array {
		return nil, &ArgTypeError{Key: k, Index: -1, Got: base, Reason: "Item of a value that is not a slice"}
	}
	return base.Elem(), nil
}

func (c *checked) taskType(k Key, t Task) (reflect.Type, error) {
	f, ok := funcs.Lookup(t.Func)
	if !ok {
		return nil, &UnregisteredFuncError{Func: t.Func, Key: k}
	}
	n := len(f.params)
	arity := func() error {
		want := fmt.Sprint(n)
		if f.variadic {
			want = fmt.Sprintf("at least %d", n-1)
		}
		return &ArgTypeError{Key: k, Func: t.Func, Index: -1, Reason: fmt.Sprintf("%d arguments, want %s", len(t.Args), want)}
	}
	if !f.variadic && len(t.Args) != n || f.variadic && len(t.Args) < n-1 {
		return nil, arity()
	}
	for i, a := range t.Args {
		if err := c.checkArg(k, t.Func, i, a, f.paramType(i, len(t.Args), a, c)); err != nil {
			return nil, err
		}
	}
	return f.ret, nil
}

// paramType is the type argument i of a call with n arguments is checked
// against: a variadic function's tail takes its element type, unless the
// call has one argument per parameter and the last is a list (spread).
func (f *Func) paramType(i, n int, a Expr, c *checked) reflect.Type {
	last := len(f.params) - 1
	if !f.variadic || i < last {
		return f.params[i]
	}
	if n == len(f.params) && c.isList(a) {
		return f.params[last]
	}
	return f.params[last].Elem()
}

// isList reports whether a is a list, directly or as a key whose value
// is one.
func (c *checked) isList(a Expr) bool {
	if r, ok := a.(refExpr); ok {
		_, a = c.resolve(r.key)
	}
	_, ok := a.(listExpr)
	return ok
}

// checkArg checks argument a against parameter type want.
func (c *checked) checkArg(k Key, fn string, i int, a Expr, want reflect.Type) error {
	bad := func(got reflect.Type, reason string) error {
		return &ArgTypeError{Key: k, Func: fn, Index: i, Want: want, Got: got, Reason: reason}
	}
	if r, ok := a.(refExpr); ok {
		if _, te := c.resolve(r.key); c.isList(te) {
			a = te // a list key is inlined where it is used
		}
	}
	if l, ok := a.(listExpr); ok {
		if want.Kind() != reflect.Slice {
			return bad(nil, "a List needs a slice parameter")
		}
		for _, it := range l.items {
			if err := c.checkArg(k, fn, i, it, want.Elem()); err != nil {
				return err
			}
		}
		return nil
	}
	got, err := c.exprType(k, a)
	if err != nil {
		return err
	}
	if !got.AssignableTo(want) {
		return bad(got, "")
	}
	if want.Kind() == reflect.Interface && got != want && !c.producedByTask(a) && !isRawSlice(got) {
		// The worker decodes a literal or stored object as the
		// parameter's type; it cannot decode into an interface.
		return bad(got, "an interface parameter takes literals and objects only of raw slice types ([]float64, ...); use a concrete parameter type")
	}
	return nil
}

// producedByTask reports whether a's value comes from a registered
// function, whose result type every process knows.
func (c *checked) producedByTask(a Expr) bool {
	switch x := a.(type) {
	case Task, itemExpr:
		return true
	case refExpr:
		_, te := c.resolve(x.key)
		return c.producedByTask(te)
	}
	return false
}

func isRawSlice(t reflect.Type) bool {
	switch t {
	case reflect.TypeFor[[]byte](), reflect.TypeFor[[]float64](), reflect.TypeFor[[]float32](),
		reflect.TypeFor[[]int64](), reflect.TypeFor[[]int32]():
		return true
	}
	return false
}

// hoistLists returns g with the tasks inside list-valued keys moved to
// keys of their own (k[i], k[i][j] for nested lists), so a list key is
// only references and values: it is inlined where it is used, and its
// tasks run once however many tasks use it. g itself is not modified.
func hoistLists(g Graph) Graph {
	var out Graph
	for k, e := range g {
		if l, ok := e.(listExpr); ok && hasTask(l) {
			if out == nil {
				out = g.Copy()
			}
			out[k] = hoist(out, k, l)
		}
	}
	if out == nil {
		return g
	}
	return out
}

func hasTask(l listExpr) bool {
	for _, it := range l.items {
		switch x := it.(type) {
		case Task, itemExpr:
			return true
		case listExpr:
			if hasTask(x) {
				return true
			}
		}
	}
	return false
}

func hoist(g Graph, k Key, l listExpr) listExpr {
	items := make([]Expr, len(l.items))
	for i, it := range l.items {
		sub := Key(fmt.Sprintf("%s[%d]", k, i))
		for _, taken := g[sub]; taken; _, taken = g[sub] {
			sub += "'"
		}
		switch x := it.(type) {
		case listExpr:
			items[i] = hoist(g, sub, x)
		case Task, itemExpr:
			g[sub] = x
			items[i] = Ref(sub)
		default:
			items[i] = it
		}
	}
	return listExpr{items}
}
