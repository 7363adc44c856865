package data

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll/data/expr"
)

// Pushdown: what a read may leave out, from the operations after it.
// Projection: walking the operations backwards from the consumer (which
// takes every column), each says which of its input's columns it needs
// (a Select its own, a Filter's condition its columns beside what the
// rest needs, an aggregation its keys and inputs; a registered function
// every column). Predicates: walking forwards from the read, each Filter
// with an expression whose columns come from the file unchanged (no
// WithColumn over them, no registered function or all-to-all before it)
// is a condition every row the plan keeps satisfies, so a Parquet row
// group whose statistics rule it out is not read at all.

// pushdown is what a read may leave out.
type pushdown struct {
	// columns the plan uses, in the source's order; nil: every one
	columns []string
	// conditions every row the plan keeps satisfies
	filters []expr.Expr
}

// pushdownFor computes the pushdown of the read ops[0] for the
// operations after it; schemas are checkOps's (schemas[0] the source's,
// schemas[i-1] the input of ops[i]).
func pushdownFor(ops []*logicalOp, schemas []*arrow.Schema) pushdown {
	var p pushdown
	src := schemas[0]
	if src == nil {
		return p
	}
	p.columns = columnsRead(ops, schemas, nil)
	// conditions on the file's columns as they are read
	redefined := map[string]bool{}
	for _, o := range ops[1:] {
		if o.kind != kindMap {
			break
		}
		switch o.op.Kind {
		case "where":
			e := o.op.Exprs[0]
			cols := e.Columns()
			if !slices.ContainsFunc(cols, func(c string) bool { return redefined[c] || len(src.FieldIndices(c)) == 0 }) {
				p.filters = append(p.filters, e)
			}
			continue
		case "with_column":
			redefined[o.op.Column] = true
			continue
		case "rename": // a condition after it names its columns anew
			for _, c := range o.op.Columns {
				redefined[c] = true
			}
			continue
		case "select", "drop", "filter", "sample":
			continue
		}
		break
	}
	return p
}

// columnsRead is the columns of the read ops[0] (schemas[0] its schema)
// that the operations after it need, in the source's order, for a
// consumer that takes the columns last (nil: every column); nil: every
// column.
func columnsRead(ops []*logicalOp, schemas []*arrow.Schema, last []string) []string {
	src := schemas[0]
	need := map[string]bool{}
	all := last == nil
	add := func(cols ...string) {
		for _, c := range cols {
			need[c] = true
		}
	}
	add(last...)
	for i := len(ops) - 1; i >= 1; i-- {
		o := ops[i]
		if o.join != nil { // the left's keys, and its columns the rest uses
			in := schemas[i-1]
			if all || in == nil {
				need, all = map[string]bool{}, true
				continue
			}
			kept := map[string]bool{}
			for c := range need {
				if len(in.FieldIndices(c)) > 0 {
					kept[c] = true
				}
			}
			need = kept
			add(o.join.spec.LeftKeys...)
			continue
		}
		switch o.kind {
		case kindLimit:
			continue
		case kindAllToAll:
			switch o.name {
			case "sort":
				for _, k := range o.keys {
					add(k.Column)
				}
			case "aggregate":
				need, all = map[string]bool{}, false
				add(o.groupKeys...)
				for _, a := range o.aggs {
					if e, ok := a.Input(); ok {
						add(e.Columns()...)
					}
				}
			}
			continue
		}
		switch o.op.Kind {
		case "select":
			need, all = map[string]bool{}, false
			add(o.op.Columns...)
		case "project":
			need, all = map[string]bool{}, false
			for _, e := range o.op.Exprs {
				add(e.Columns()...)
			}
		case "drop":
			add(o.op.Columns...)
		case "rename": // the columns used after it, by their names before it
			if all || schemas[i-1] == nil {
				// unchecked, it renames every column it names
				for j := 0; j < len(o.op.Columns); j += 2 {
					add(o.op.Columns[j])
				}
				continue
			}
			before := map[string]bool{}
			renamed := map[string]string{} // new name -> old
			for j := 0; j+1 < len(o.op.Columns); j += 2 {
				renamed[o.op.Columns[j+1]] = o.op.Columns[j]
			}
			for c := range need {
				if old, ok := renamed[c]; ok {
					before[old] = true
				} else {
					before[c] = true
				}
			}
			need = before
		case "where":
			add(o.op.Exprs[0].Columns()...)
		case "sample": // every row's columns pass or none
		case "with_column":
			delete(need, o.op.Column)
			add(o.op.Exprs[0].Columns()...)
		default: // a registered function, a write: every column
			need, all = map[string]bool{}, true
		}
	}
	if all {
		return nil
	}
	var columns []string
	for _, f := range src.Fields() {
		if need[f.Name] {
			columns = append(columns, f.Name)
		}
	}
	if len(columns) == 0 && src.NumFields() > 0 {
		columns = []string{src.Field(0).Name} // rows of no column: one still counts them
	}
	return columns
}
