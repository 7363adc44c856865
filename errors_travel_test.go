package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// chargeError is a registered error type: it comes back as itself.
type chargeError struct {
	User  string
	Cents int
}

func (e *chargeError) Error() string {
	return fmt.Sprintf("cannot charge %s %d cents", e.User, e.Cents)
}

// hiddenError is never registered: only its message and type name travel.
type hiddenError struct{ Code int }

func (e *hiddenError) Error() string { return fmt.Sprintf("hidden failure %d", e.Code) }

// errOutOfStock is a registered sentinel.
var errOutOfStock = errors.New("errt: out of stock")

func init() {
	atoll.RegisterError[*chargeError]()
	atoll.RegisterError(errOutOfStock)
}

var (
	failCharge = atoll.NewFunc1("errt.failCharge", func(_ context.Context, user string) (int, error) {
		return 0, fmt.Errorf("billing %s: %w", user, &chargeError{User: user, Cents: 250})
	})
	failStock = atoll.NewFunc1("errt.failStock", func(_ context.Context, item string) (int, error) {
		return 0, reserve(item)
	})
	failHidden = atoll.NewFunc1("errt.failHidden", func(_ context.Context, code int) (int, error) {
		return 0, &hiddenError{Code: code}
	})
	// failNested fails with the error of a task it ran (on the node
	// given, "" for anywhere).
	failNested = atoll.NewFunc2("errt.failNested", func(ctx context.Context, user, node string) (int, error) {
		var opts []atoll.TaskOption
		if node != "" {
			opts = append(opts, atoll.OnNode(node, false))
		}
		_, err := atoll.Get(ctx, failCharge.Remote(ctx, atoll.Value(user), opts...))
		return 0, fmt.Errorf("outer task: %w", err)
	})
	errOnNode = atoll.NewFunc1("errt.errOnNode", func(_ context.Context, _ int) (string, error) {
		return "", fmt.Errorf("on node %s: %w", atoll.CurrentNodeID(), errors.Join(errOutOfStock, &chargeError{User: atoll.CurrentNodeID(), Cents: 1}))
	})
)

// reserve makes its error with atoll.Errorf, which records this stack.
func reserve(item string) error {
	return atoll.Errorf("reserving %s: %w", item, errOutOfStock)
}

// checkErrorsTravel runs the error cases against a running atoll.
func checkErrorsTravel(ctx context.Context, t *testing.T) {
	t.Run("RegisteredStructType", func(t *testing.T) {
		_, err := atoll.Get(ctx, failCharge.Remote(ctx, atoll.Value("ann")))
		var ce *chargeError
		if !errors.As(err, &ce) || ce.User != "ann" || ce.Cents != 250 {
			t.Fatalf("errors.As found %+v in %v", ce, err)
		}
		var te *atoll.TaskError
		if !errors.As(err, &te) || te.TaskName != "errt.failCharge" || te.ErrorType != "*fmt.wrapError" || te.UnregisteredType != "" {
			t.Fatalf("the TaskError around it: %+v", te)
		}
		if !errors.Is(err, atoll.ErrTask) {
			t.Fatal("a registered error no longer matches ErrTask")
		}
		// No stack recorded in the error: the worker's, where the
		// runtime received it.
		if !strings.Contains(te.RemoteStack, "no stack in the error") || !strings.Contains(te.RemoteStack, "goroutine") ||
			!strings.Contains(te.RemoteStack, "execute") {
			t.Fatalf("remote stack:\n%s", te.RemoteStack)
		}
	})
	t.Run("WrappedSentinelWithStack", func(t *testing.T) {
		_, err := atoll.Get(ctx, failStock.Remote(ctx, atoll.Value("apples")))
		if !errors.Is(err, errOutOfStock) {
			t.Fatalf("errors.Is(err, errOutOfStock) is false for %v", err)
		}
		var te *atoll.TaskError
		if !errors.As(err, &te) || te.Message != "reserving apples: errt: out of stock" {
			t.Fatalf("TaskError %+v", te)
		}
		// atoll.Errorf recorded where it was called.
		if !strings.Contains(te.RemoteStack, "error made at") || !strings.Contains(te.RemoteStack, "atoll_test.reserve") ||
			!strings.Contains(te.RemoteStack, "errors_travel_test.go") {
			t.Fatalf("remote stack does not show reserve:\n%s", te.RemoteStack)
		}
	})
	t.Run("UnregisteredTypeKeepsMessage", func(t *testing.T) {
		_, err := atoll.Get(ctx, failHidden.Remote(ctx, atoll.Value(7)))
		var he *hiddenError
		if errors.As(err, &he) {
			t.Fatal("an unregistered type came back as itself")
		}
		var te *atoll.TaskError
		if !errors.As(err, &te) || te.Message != "hidden failure 7" || te.ErrorType != "*atoll_test.hiddenError" ||
			te.UnregisteredType != "*github.com/atoll-runtime/atoll_test.hiddenError" {
			t.Fatalf("TaskError %+v", te)
		}
		if !strings.Contains(te.RegisterHint(), "atoll.RegisterError[*github.com/atoll-runtime/atoll_test.hiddenError]()") {
			t.Fatalf("the hint does not say what to register: %v", te.RegisterHint())
		}
	})
	t.Run("ThroughANestedTask", func(t *testing.T) {
		_, err := atoll.Get(ctx, failNested.Remote(ctx, atoll.Value("bob"), atoll.Value("")))
		var ce *chargeError
		if !errors.As(err, &ce) || ce.User != "bob" {
			t.Fatalf("errors.As through two tasks found %+v in %v", ce, err)
		}
		var te *atoll.TaskError
		if !errors.As(err, &te) || te.TaskName != "errt.failNested" {
			t.Fatalf("outermost TaskError %+v", te)
		}
	})
}

func TestErrorsTravelGoroutineWorkers(t *testing.T) {
	checkErrorsTravel(start(t), t)
}

func TestErrorsTravelProcessWorkers(t *testing.T) {
	checkErrorsTravel(startProcesses(t), t)
}
