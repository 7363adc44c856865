package graph

import (
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// Shuffle adds to g a repartition of the partitions held by inputs into
// p output partitions, and returns the new graph (g is not modified) and
// the output keys, TupleKey(out, j) for j < p.
//
// split names a registered func(ctx, part T, p int) ([]T, error) that cuts
// one input partition into p pieces, piece j destined for output j;
// combine a registered func(ctx, pieces ...T) (T, error) (or one taking a
// []T) that joins the pieces of one output. The shuffle runs as
// len(inputs) map tasks, each a MultiReturn task with p outputs (atoll's
// multiple returns: each piece its own object), and p reduce tasks that
// read only their pieces: 2·P tasks where NaiveShuffle needs P² + 2·P
// (Dask-on-Ray's shuffle optimisation).
func Shuffle(g Graph, inputs []Key, split, combine string, p int, out string) (Graph, []Key, error) {
	return shuffle(g, inputs, split, combine, p, out, false)
}

// NaiveShuffle is Shuffle as Dask's task-based shuffle writes it: one
// split task per input returning all p pieces as one value, P² tasks
// each taking one piece out of one split's result, and p combine tasks.
// It exists to measure Shuffle against.
func NaiveShuffle(g Graph, inputs []Key, split, combine string, p int, out string) (Graph, []Key, error) {
	return shuffle(g, inputs, split, combine, p, out, true)
}

func shuffle(g Graph, inputs []Key, split, combine string, p int, out string, naive bool) (Graph, []Key, error) {
	if p < 1 || len(inputs) == 0 || out == "" {
		return nil, nil, fmt.Errorf("%w: graph: shuffle of %d inputs into %d partitions named %q", atoll.ErrInvalidArgument, len(inputs), p, out)
	}
	g = g.Copy()
	set := func(k Key, e Expr) error {
		if _, taken := g[k]; taken {
			return fmt.Errorf("%w: graph: shuffle: key %q is in the graph already", atoll.ErrInvalidArgument, k)
		}
		g[k] = e
		return nil
	}
	splits := make([]Key, len(inputs))
	for i, in := range inputs {
		splits[i] = TupleKey(out+"-split", i)
		t := Call(split, Ref(in), Lit(p))
		var e Expr = t
		if !naive {
			e = MultiReturn(t, p)
		}
		if err := set(splits[i], e); err != nil {
			return nil, nil, err
		}
	}
	outs := make([]Key, p)
	for j := range outs {
		pieces := make([]Expr, len(inputs))
		for i := range inputs {
			pieces[i] = Item(Ref(splits[i]), j)
			if naive {
				k := TupleKey(out+"-piece", i, j)
				if err := set(k, pieces[i]); err != nil {
					return nil, nil, err
				}
				pieces[i] = Ref(k)
			}
		}
		outs[j] = TupleKey(out, j)
		if err := set(outs[j], Call(combine, List(pieces...))); err != nil {
			return nil, nil, err
		}
	}
	return g, outs, nil
}
