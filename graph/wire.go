package graph

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
)

// The task spec the driver sends to graph.exec as its first argument: the
// (fused) expression with references replaced by dependency slots, the
// natural type of each dependency, and the task callbacks to run. A small
// binary format: uvarints and length-prefixed strings.

const wireVersion = 1

// Expression kinds on the wire.
const (
	wTask byte = iota + 1
	wDep
	wLit
	wList
	wItem
)

type wireTask struct {
	key  Key
	hash string
	nret int // outputs of a MultiReturn task; 0 for one result
	deps []wireDep
	cbs  []cbRef
	expr wexpr
}

// wireDep says how to decode a dependency: as the result type of
// registered function fn, Elem()'d depth times, or, when fn is empty, as
// the type of the parameter it is passed to.
type wireDep struct {
	fn    string
	depth int
}

type cbRef struct{ name, param string }

type wexpr struct {
	kind   byte
	fn     string // wTask
	spread bool   // wTask: the last argument is the variadic tail
	args   []wexpr
	index  int // wDep: slot; wItem: element
	lit    codec.Raw
}

type wbuf struct{ b []byte }

func (w *wbuf) uint(v int)     { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *wbuf) str(s string)   { w.uint(len(s)); w.b = append(w.b, s...) }
func (w *wbuf) bytes(b []byte) { w.uint(len(b)); w.b = append(w.b, b...) }

func (w *wbuf) expr(e *wexpr) {
	w.b = append(w.b, e.kind)
	switch e.kind {
	case wTask:
		w.str(e.fn)
		spread := 0
		if e.spread {
			spread = 1
		}
		w.uint(spread)
		w.uint(len(e.args))
		for i := range e.args {
			w.expr(&e.args[i])
		}
	case wDep:
		w.uint(e.index)
	case wLit:
		w.uint(int(e.lit.Codec))
		w.bytes(e.lit.Data)
	case wList:
		w.uint(len(e.args))
		for i := range e.args {
			w.expr(&e.args[i])
		}
	case wItem:
		w.uint(e.index)
		w.expr(&e.args[0])
	}
}

// encodeExpr returns the bytes of e alone (what the content hash covers).
func encodeExpr(e *wexpr) []byte {
	var w wbuf
	w.expr(e)
	return w.b
}

func (t *wireTask) encode(exprBytes []byte) []byte {
	var w wbuf
	w.uint(wireVersion)
	w.str(string(t.key))
	w.str(t.hash)
	w.uint(t.nret)
	w.uint(len(t.deps))
	for _, d := range t.deps {
		w.str(d.fn)
		w.uint(d.depth)
	}
	w.uint(len(t.cbs))
	for _, c := range t.cbs {
		w.str(c.name)
		w.str(c.param)
	}
	w.b = append(w.b, exprBytes...)
	return w.b
}

var errShort = errors.New("graph: truncated task spec")

type rbuf struct {
	b   []byte
	err error
}

func (r *rbuf) uint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<40 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *rbuf) bytes() []byte {
	n := r.uint()
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *rbuf) str() string { return string(r.bytes()) }

func (r *rbuf) expr(depth int) wexpr {
	if r.err != nil {
		return wexpr{}
	}
	if depth > 10000 || len(r.b) == 0 {
		r.err = errShort
		return wexpr{}
	}
	e := wexpr{kind: r.b[0]}
	r.b = r.b[1:]
	switch e.kind {
	case wTask:
		e.fn = r.str()
		e.spread = r.uint() == 1
		n := r.uint()
		for i := 0; i < n && r.err == nil; i++ {
			e.args = append(e.args, r.expr(depth+1))
		}
	case wDep:
		e.index = r.uint()
	case wLit:
		e.lit.Codec = atollpb.Codec(r.uint())
		e.lit.Data = r.bytes()
	case wList:
		n := r.uint()
		e.args = make([]wexpr, 0, min(n, len(r.b)))
		for i := 0; i < n && r.err == nil; i++ {
			e.args = append(e.args, r.expr(depth+1))
		}
	case wItem:
		e.index = r.uint()
		e.args = []wexpr{r.expr(depth + 1)}
	default:
		r.err = fmt.Errorf("graph: unknown expression kind %d in task spec", e.kind)
	}
	return e
}

func decodeWireTask(b []byte) (*wireTask, error) {
	r := &rbuf{b: b}
	if v := r.uint(); r.err == nil && v != wireVersion {
		return nil, fmt.Errorf("graph: task spec version %d, this binary reads %d", v, wireVersion)
	}
	t := &wireTask{key: Key(r.str()), hash: r.str(), nret: r.uint()}
	n := r.uint()
	for i := 0; i < n && r.err == nil; i++ {
		t.deps = append(t.deps, wireDep{fn: r.str(), depth: r.uint()})
	}
	n = r.uint()
	for i := 0; i < n && r.err == nil; i++ {
		t.cbs = append(t.cbs, cbRef{name: r.str(), param: r.str()})
	}
	t.expr = r.expr(0)
	if r.err == nil && len(r.b) != 0 {
		r.err = errShort
	}
	if r.err != nil {
		return nil, r.err
	}
	return t, nil
}
