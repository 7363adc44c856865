package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// The operations written with expressions (package data/expr): Filter,
// WithColumn, SelectExprs, and aggregations over expressions. They
// travel inside the task spec (no registration), are checked against
// the schema when the dataset is planned, when that schema is known
// (schema.go), and run on Arrow kernels over each batch.

// Filter keeps the rows for which cond is true (a null counts as false):
// an expression of package data/expr, evaluated over whole batches.
// FilterFunc takes a registered row predicate instead, for what an
// expression cannot say.
//
//	ds.Filter(expr.Col("price").Mul(expr.Col("qty")).Gt(100))
func (d *Dataset) Filter(cond expr.Expr, opts ...OpOption) *Dataset {
	if _, err := exprWire(cond); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("filter", opSpec{Kind: "where", Exprs: []expr.Expr{cond}}, opts)
}

// FilterFunc keeps the rows fn accepts: a registered row predicate,
// called once per row (Filter with an expression runs over whole
// batches and is much faster).
func (d *Dataset) FilterFunc(fn *Predicate, opts ...OpOption) *Dataset {
	if fn == nil {
		return d.withErr(fmt.Errorf("%w: data: FilterFunc(nil)", atoll.ErrInvalidArgument))
	}
	if err := registered(predicates, "FilterFunc", fn.name); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("filter", opSpec{Kind: "filter", Fn: fn.name}, opts)
}

// WithColumn sets column name to the values of e: it replaces a column
// of that name where it is, or adds one at the end.
//
//	ds.WithColumn("revenue", expr.Col("price").Mul(expr.Col("qty")))
func (d *Dataset) WithColumn(name string, e expr.Expr, opts ...OpOption) *Dataset {
	if name == "" {
		return d.withErr(fmt.Errorf("%w: data: WithColumn needs a name", atoll.ErrInvalidArgument))
	}
	if _, err := exprWire(e); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("with_column", opSpec{Kind: "with_column", Column: name, Exprs: []expr.Expr{e}}, opts)
}

// SelectExprs makes the columns of es, in order, each named by its
// Name (its alias from As, the column it refers to, else its text).
//
//	ds.SelectExprs(expr.Col("id"), expr.Col("price").Mul(1.2).As("gross"))
func (d *Dataset) SelectExprs(es ...expr.Expr) *Dataset {
	if len(es) == 0 {
		return d.withErr(fmt.Errorf("%w: data: SelectExprs of no expression", atoll.ErrInvalidArgument))
	}
	seen := map[string]bool{}
	for _, e := range es {
		if _, err := exprWire(e); err != nil {
			return d.withErr(err)
		}
		if seen[e.Name()] {
			return d.withErr(fmt.Errorf("%w: data: SelectExprs makes column %q twice (name one with As)", atoll.ErrInvalidArgument, e.Name()))
		}
		seen[e.Name()] = true
	}
	return d.mapOp("select", opSpec{Kind: "project", Exprs: append([]expr.Expr(nil), es...)}, nil)
}

// exprWire checks that e is an expression (not the zero Expr).
func exprWire(e expr.Expr) (expr.Expr, error) {
	if e.Proto() == nil {
		return e, fmt.Errorf("%w: data: an empty expression", atoll.ErrInvalidArgument)
	}
	return e, nil
}

// binder binds a task's expressions once per schema: a task's records
// normally share one.
type binder struct {
	schema *arrow.Schema
	bound  []*expr.Bound
}

func (b *binder) bind(op opSpec, s *arrow.Schema) ([]*expr.Bound, error) {
	if b.schema != nil && (b.schema == s || b.schema.Equal(s)) {
		return b.bound, nil
	}
	b.bound = b.bound[:0]
	for _, e := range op.Exprs {
		bd, err := e.Bind(s)
		if err != nil {
			return nil, err
		}
		b.bound = append(b.bound, bd)
	}
	b.schema = s
	return b.bound, nil
}

// evalExpr evaluates a bound expression of op over rec; a failure (a
// cast that does not convert) is a FunctionError naming the expression
// and the operation.
func evalExpr(ctx context.Context, op opSpec, b *expr.Bound, rec arrow.RecordBatch) (arrow.Array, error) {
	out, err := b.Eval(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("data: %w", errs.FunctionFailed(exprOpName(op.Kind), b.Expr().String(), "", err))
	}
	return out, nil
}

// exprOpName is the operation an expression op's errors name.
func exprOpName(kind string) string {
	switch kind {
	case "where":
		return "filter"
	case "project":
		return "select"
	}
	return kind
}

// applyExprOp runs where, with_column or project over recs; it does not
// release recs.
func applyExprOp(ctx context.Context, op opSpec, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	fail := func(err error) ([]arrow.RecordBatch, error) {
		releaseAll(out)
		return nil, err
	}
	var bd binder
	for _, rec := range recs {
		bound, err := bd.bind(op, rec.Schema())
		if err != nil {
			return fail(err)
		}
		switch op.Kind {
		case "where":
			if t := bound[0].Type(); t.ID() != arrow.BOOL {
				return fail(&expr.Error{Expr: bound[0].Expr().String(), Message: "a filter's condition is " + expr.TypeName(t) + ", not bool"})
			}
			mask, err := evalExpr(ctx, op, bound[0], rec)
			if err != nil {
				return fail(err)
			}
			nr, err := filterByMask(ctx, rec, mask.(*array.Boolean))
			mask.Release()
			if err != nil {
				return fail(err)
			}
			out = append(out, nr)
		case "with_column":
			col, err := evalExpr(ctx, op, bound[0], rec)
			if err != nil {
				return fail(err)
			}
			out = append(out, setColumn(rec, op.Column, col))
			col.Release()
		case "project":
			fields := make([]arrow.Field, len(bound))
			cols := make([]arrow.Array, len(bound))
			for i, b := range bound {
				c, err := evalExpr(ctx, op, b, rec)
				if err != nil {
					releaseArrays(cols)
					return fail(err)
				}
				fields[i], cols[i] = exprField(op.Exprs[i], b.Type(), rec.Schema()), c
			}
			out = append(out, array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()))
			releaseArrays(cols)
		default:
			return fail(errs.Malformedf(specWhat, "unknown expression operation %q", op.Kind))
		}
	}
	return out, nil
}

// filterByMask keeps rec's rows where mask is true: rec itself when
// every row is kept.
func filterByMask(ctx context.Context, rec arrow.RecordBatch, mask *array.Boolean) (arrow.RecordBatch, error) {
	if mask.NullN() == 0 && mask.Len() > 0 {
		if trues := countTrue(mask); trues == mask.Len() {
			rec.Retain()
			return rec, nil
		} else if trues == 0 {
			return rec.NewSlice(0, 0), nil
		}
	}
	return compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
}

func countTrue(b *array.Boolean) int {
	return bitutil.CountSetBits(b.Data().Buffers()[1].Bytes(), b.Data().Offset(), b.Len())
}

// exprField is the field an expression makes: its name, its type;
// a column it only renames keeps its field's nullability and metadata.
func exprField(e expr.Expr, t arrow.DataType, s *arrow.Schema) arrow.Field {
	if c, ok := e.IsColumn(); ok {
		if idx := s.FieldIndices(c); len(idx) > 0 {
			f := s.Field(idx[0])
			f.Name = e.Name()
			return f
		}
	}
	return arrow.Field{Name: e.Name(), Type: t, Nullable: true}
}

// setColumn returns rec with column name set to col: in place of a
// column of that name, else at the end.
func setColumn(rec arrow.RecordBatch, name string, col arrow.Array) arrow.RecordBatch {
	s := rec.Schema()
	fields := append([]arrow.Field(nil), s.Fields()...)
	cols := append([]arrow.Array(nil), rec.Columns()...)
	f := arrow.Field{Name: name, Type: col.DataType(), Nullable: true}
	if idx := s.FieldIndices(name); len(idx) > 0 {
		fields[idx[0]], cols[idx[0]] = f, col
	} else {
		fields, cols = append(fields, f), append(cols, col)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}
