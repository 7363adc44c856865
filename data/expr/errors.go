package expr

import (
	"reflect"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Error: an expression does not fit the schema it is bound to. Expr is
// the whole expression and Part the operation at fault; Column is the
// column involved (when one is), with Columns, the columns there are,
// when it does not exist; Type is the type found where another was
// needed; Message says what was wanted. It matches
// atoll.ErrInvalidArgument, and travels from the process that bound the
// expression as itself.
type Error struct {
	Expr    string
	Part    string
	Column  string
	Columns []string
	Type    string
	Message string
}

func (e *Error) Error() string {
	if e.Part != "" && e.Part != e.Expr {
		return "expression " + e.Expr + ": in " + e.Part + ": " + e.Message
	}
	return "expression " + e.Expr + ": " + e.Message
}

// Is matches atoll.ErrInvalidArgument.
func (e *Error) Is(target error) bool { return target == errs.ErrInvalidArgument }

func init() {
	if err := errs.RegisterType(reflect.TypeFor[*Error]()); err != nil {
		panic(err)
	}
}
