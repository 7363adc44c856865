package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"reflect"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// A plan is what Compute and Persist submit: the tasks the requested keys
// need (culled), linear chains fused, each with its wire expression, its
// dependencies and its content hash. Making a plan does no I/O.

// inlineLitBytes: literal keys up to this size travel inside the specs of
// the tasks that use them; larger ones are put in the object store once.
const inlineLitBytes = 16 << 10

type plan struct {
	c         *checked
	requested []Key // the keys asked for, aliases resolved, list items included
	nodes     map[Key]*node
	order     []*node // submitted tasks, dependencies first
	lits      map[Key]*litSource
	stats     Stats
}

// node is one atoll task: a key computed by a task, with the chain fused
// into it.
type node struct {
	key   Key
	expr  Expr // the key's value with fused keys inlined
	nret  int  // > 0 for MultiReturn
	typ   reflect.Type
	deps  []source // dependency slots, in order
	wexpr *atollpb.GraphExpr
	wdeps []*atollpb.GraphDep
	hash  string
}

// source is where a dependency's value comes from: output out of task
// node, a literal put in the store, or an object.
type source struct {
	node *node
	out  int
	lit  *litSource
	obj  objectExpr
}

type litSource struct {
	key  Key
	raw  codec.Raw
	hash string
}

func isTaskValue(e Expr) bool {
	switch e.(type) {
	case Task, multiExpr, itemExpr:
		return true
	}
	return false
}

func makePlan(g Graph, keys []Key, fusion, hash bool) (*plan, error) {
	c, err := check(g, keys)
	if err != nil {
		return nil, err
	}
	p := &plan{c: c, nodes: make(map[Key]*node, len(c.order)), lits: map[Key]*litSource{}}
	p.stats.Keys = len(g)
	for _, e := range g {
		if isTaskValue(e) {
			p.stats.TasksBefore++
		}
	}
	for _, k := range c.order {
		if isTaskValue(c.g[k]) {
			p.stats.AfterCull++
		}
	}
	requested := map[Key]bool{}
	var want func(k Key)
	want = func(k Key) {
		k, e := c.resolve(k)
		if requested[k] {
			return
		}
		requested[k] = true
		p.requested = append(p.requested, k)
		if l, ok := e.(listExpr); ok {
			walkRefs(l, want)
		}
	}
	for _, k := range keys {
		want(k)
	}

	// Normalise every task's value: aliases resolved, list keys inlined.
	norm := make(map[Key]Expr, len(c.order))
	for _, k := range c.order {
		if isTaskValue(c.g[k]) {
			norm[k] = c.normalize(c.g[k])
		}
	}
	// Fusion: d folds into its consumer when d is a single-result task
	// used exactly once, not requested, by a task that depends on nothing
	// else (Dask's linear chains).
	fusedInto := map[Key]Key{}
	if fusion {
		uses := make(map[Key]int, len(c.order))
		consumer := make(map[Key]Key, len(c.order))
		for _, k := range c.order {
			if e, ok := norm[k]; ok {
				walkRefs(e, func(d Key) { uses[d]++; consumer[d] = k })
			}
		}
		for _, d := range c.order {
			e, ok := norm[d]
			if !ok || requested[d] || uses[d] != 1 {
				continue
			}
			if _, multi := e.(multiExpr); multi {
				continue
			}
			if cons := consumer[d]; len(Deps(norm[cons])) == 1 {
				fusedInto[d] = cons
			}
		}
	}
	var hashes map[Key]string
	if hash { // only callbacks need the hashes
		if hashes, err = p.hashKeys(norm); err != nil {
			return nil, err
		}
	}
	final := make(map[Key]Expr, len(c.order))
	for _, k := range c.order {
		e, ok := norm[k]
		if !ok {
			continue
		}
		final[k] = substitute(e, func(d Key) (Expr, bool) {
			if fusedInto[d] == k {
				return final[d], true
			}
			return nil, false
		})
	}
	for _, k := range c.order {
		e, ok := final[k]
		if !ok || fusedInto[k] != "" {
			continue
		}
		n := &node{key: k, expr: e, typ: c.types[k], hash: hashes[k]}
		if m, ok := e.(multiExpr); ok {
			n.nret = m.n
		}
		if err := p.build(n); err != nil {
			return nil, err
		}
		p.nodes[k] = n
		p.order = append(p.order, n)
	}
	p.stats.AfterFusion = len(p.order)
	return p, nil
}

// normalize resolves aliases and inlines list keys in e.
func (c *checked) normalize(e Expr) Expr {
	return substitute(e, func(k Key) (Expr, bool) {
		k2, v := c.resolve(k)
		if l, ok := v.(listExpr); ok {
			return c.normalize(l), true
		}
		if k2 != k {
			return refExpr{k2}, true
		}
		return nil, false
	})
}

// substitute returns e with the Refs that sub replaces replaced.
func substitute(e Expr, sub func(Key) (Expr, bool)) Expr {
	switch x := e.(type) {
	case refExpr:
		if r, ok := sub(x.key); ok {
			return r
		}
		return x
	case Task:
		args := make([]Expr, len(x.Args))
		for i, a := range x.Args {
			args[i] = substitute(a, sub)
		}
		return Task{Func: x.Func, Args: args}
	case listExpr:
		items := make([]Expr, len(x.items))
		for i, a := range x.items {
			items[i] = substitute(a, sub)
		}
		return listExpr{items}
	case itemExpr:
		return itemExpr{substitute(x.of, sub), x.index}
	case multiExpr:
		return multiExpr{substitute(x.task, sub).(Task), x.n}
	}
	return e
}

// build makes n's wire expression and dependency slots. Its
// dependencies are built already (topological order).
func (p *plan) build(n *node) error {
	type slotKey struct {
		node *node
		out  int
		lit  *litSource
		obj  string
	}
	slots := map[slotKey]int{}
	dep := func(s source, t *atollpb.GraphDep) *atollpb.GraphExpr {
		id := slotKey{node: s.node, out: s.out, lit: s.lit}
		if s.obj.ref != nil {
			id.obj = s.obj.ref.ID()
		}
		i, ok := slots[id]
		if !ok {
			i = len(n.deps)
			slots[id] = i
			n.deps = append(n.deps, s)
			n.wdeps = append(n.wdeps, t)
		}
		return &atollpb.GraphExpr{Kind: atollpb.GraphExpr_DEP, Index: uint32(i)}
	}
	literal := func(raw codec.Raw) *atollpb.GraphExpr {
		return &atollpb.GraphExpr{Kind: atollpb.GraphExpr_LITERAL, Codec: raw.Codec, Data: raw.Data}
	}
	var build func(e Expr) (*atollpb.GraphExpr, error)
	args := func(w *atollpb.GraphExpr, items []Expr) (*atollpb.GraphExpr, error) {
		w.Args = make([]*atollpb.GraphExpr, len(items))
		for i, a := range items {
			wa, err := build(a)
			if err != nil {
				return nil, err
			}
			w.Args[i] = wa
		}
		return w, nil
	}
	build = func(e Expr) (*atollpb.GraphExpr, error) {
		switch x := e.(type) {
		case Task:
			f, _ := funcs.Lookup(x.Func) // Validate found it
			w := &atollpb.GraphExpr{Kind: atollpb.GraphExpr_CALL, Func: x.Func}
			w.Spread = f.variadic && len(x.Args) == len(f.params) && isList(x.Args[len(x.Args)-1])
			return args(w, x.Args)
		case multiExpr:
			return build(x.task)
		case listExpr:
			return args(&atollpb.GraphExpr{Kind: atollpb.GraphExpr_LIST}, x.items)
		case litExpr:
			enc, err := codec.Encode(x.v)
			if err != nil {
				return nil, err
			}
			return literal(codec.Raw(enc)), nil
		case objectExpr:
			return dep(source{obj: x}, &atollpb.GraphDep{}), nil
		case itemExpr:
			if r, ok := x.of.(refExpr); ok {
				if m := p.nodes[r.key]; m != nil && m.nret > 0 {
					return dep(source{node: m, out: x.index}, p.natural(x)), nil
				}
			}
			w, err := build(x.of)
			if err != nil {
				return nil, err
			}
			return &atollpb.GraphExpr{Kind: atollpb.GraphExpr_ITEM, Index: uint32(x.index), Args: []*atollpb.GraphExpr{w}}, nil
		case refExpr:
			if m := p.nodes[x.key]; m != nil {
				return dep(source{node: m}, p.natural(x)), nil
			}
			switch v := p.c.g[x.key].(type) {
			case litExpr:
				ls, err := p.lit(x.key, v)
				if err != nil {
					return nil, err
				}
				if len(ls.raw.Data) <= inlineLitBytes {
					return literal(ls.raw), nil
				}
				return dep(source{lit: ls}, &atollpb.GraphDep{}), nil
			case objectExpr:
				return dep(source{obj: v}, &atollpb.GraphDep{}), nil
			}
			return nil, errs.Invalidf("graph: internal error: key %q is not planned", x.key)
		}
		return nil, errs.Invalidf("graph: internal error: expression %T", e)
	}
	w, err := build(n.expr)
	if err != nil {
		return err
	}
	n.wexpr = w
	return nil
}

// hashKeys gives every task key a content hash: of its expression before
// fusion, with each reference replaced by the hash of what it refers to
// (a Merkle hash), so it does not depend on key names or on fusion.
func (p *plan) hashKeys(norm map[Key]Expr) (map[Key]string, error) {
	hashes := map[Key]string{}
	var write func(h hash.Hash, e Expr) error
	write = func(h hash.Hash, e Expr) error {
		switch x := e.(type) {
		case Task:
			fmt.Fprintf(h, "T%q %d(", x.Func, len(x.Args))
			for _, a := range x.Args {
				if err := write(h, a); err != nil {
					return err
				}
			}
			h.Write([]byte(")"))
		case multiExpr:
			fmt.Fprintf(h, "M%d ", x.n)
			return write(h, x.task)
		case listExpr:
			fmt.Fprintf(h, "L%d[", len(x.items))
			for _, a := range x.items {
				if err := write(h, a); err != nil {
					return err
				}
			}
			h.Write([]byte("]"))
		case itemExpr:
			fmt.Fprintf(h, "I%d ", x.index)
			return write(h, x.of)
		case litExpr:
			enc, err := codec.Encode(x.v)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(enc.Data)
			fmt.Fprintf(h, "V%d:%x ", enc.Codec, sum)
		case objectExpr:
			fmt.Fprintf(h, "O%s ", x.ref.ID())
		case refExpr:
			if hk, ok := hashes[x.key]; ok {
				fmt.Fprintf(h, "R%s ", hk)
				return nil
			}
			return write(h, p.c.g[x.key]) // a literal or an object key
		}
		return nil
	}
	for _, k := range p.c.order {
		e, ok := norm[k]
		if !ok {
			continue
		}
		h := sha256.New()
		if err := write(h, e); err != nil {
			return nil, fmt.Errorf("graph: key %q: %w", k, err)
		}
		hashes[k] = hex.EncodeToString(h.Sum(nil))
	}
	return hashes, nil
}

func isList(e Expr) bool {
	_, ok := e.(listExpr)
	return ok
}

// natural is how a worker decodes the value of e, a key computed by a
// task (Ref) or an output of one (Item): as its producing function's
// result type, or an element of it.
func (p *plan) natural(e Expr) *atollpb.GraphDep {
	switch x := e.(type) {
	case refExpr:
		return p.natural(p.c.g[x.key])
	case Task:
		return &atollpb.GraphDep{Func: x.Func}
	case multiExpr:
		return &atollpb.GraphDep{Func: x.task.Func}
	case itemExpr:
		d := p.natural(x.of)
		d.Depth++
		return d
	}
	return &atollpb.GraphDep{}
}

func (p *plan) lit(k Key, l litExpr) (*litSource, error) {
	if ls := p.lits[k]; ls != nil {
		return ls, nil
	}
	enc, err := codec.Encode(l.v)
	if err != nil {
		return nil, fmt.Errorf("graph: key %q: %w", k, err)
	}
	sum := sha256.Sum256(enc.Data)
	ls := &litSource{key: k, raw: codec.Raw(enc),
		hash: fmt.Sprintf("lit:%d:%s", enc.Codec, hex.EncodeToString(sum[:]))}
	p.lits[k] = ls
	return ls, nil
}
