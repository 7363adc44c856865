package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/atoll-runtime/atoll"
)

// InsufficientFunds is an error type of the program, registered so it
// comes back from tasks as itself.
type InsufficientFunds struct {
	Account string
	Short   int
}

func (e *InsufficientFunds) Error() string {
	return fmt.Sprintf("account %s is %d short", e.Account, e.Short)
}

// ErrAccountClosed is a sentinel of the program.
var ErrAccountClosed = errors.New("account closed")

func init() {
	// At package init, like remote functions: every process of the
	// binary then knows them.
	atoll.RegisterError[*InsufficientFunds]()
	atoll.RegisterError(ErrAccountClosed)
}

var withdraw = atoll.NewFunc1("example.withdraw", func(_ context.Context, account string) (int, error) {
	if account == "closed" {
		// atoll.Errorf also records this stack for TaskError.RemoteStack.
		return 0, atoll.Errorf("withdraw from %s: %w", account, ErrAccountClosed)
	}
	return 0, fmt.Errorf("withdraw: %w", &InsufficientFunds{Account: account, Short: 40})
})

// A task's error comes back wrapped in a TaskError (task name and id,
// remote stack), with the program's registered errors inside it: errors.As
// and errors.Is work as if the task had run in this process.
func ExampleRegisterError() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(64<<20), atoll.WithNumCPUs(1)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	_, err := atoll.Get(ctx, withdraw.Remote(ctx, atoll.Value("alice")))
	var short *InsufficientFunds
	if errors.As(err, &short) {
		fmt.Println("short by", short.Short, "on", short.Account)
	}
	var te *atoll.TaskError
	if errors.As(err, &te) {
		fmt.Println("failed task:", te.TaskName)
	}

	_, err = atoll.Get(ctx, withdraw.Remote(ctx, atoll.Value("closed")))
	fmt.Println("closed:", errors.Is(err, ErrAccountClosed))
	// Output:
	// short by 40 on alice
	// failed task: example.withdraw
	// closed: true
}

// ErrBusy is a sentinel of the program for a failure that passes.
var ErrBusy = errors.New("ledger busy")

func init() { atoll.RegisterError(ErrBusy) }

// withdrawals counts transfer's attempts (the example's workers run in
// this process).
var withdrawals atomic.Int32

var transfer = atoll.NewFunc1("example.transfer", func(_ context.Context, account string) (string, error) {
	n := withdrawals.Add(1)
	switch {
	case account == "closed":
		return "", fmt.Errorf("transfer from %s: %w", account, ErrAccountClosed)
	case n == 1:
		return "", fmt.Errorf("transfer from %s: %w", account, ErrBusy)
	}
	return fmt.Sprintf("done on attempt %d", n), nil
})

// RetryExceptions given sentinels retries only the errors that match one:
// a busy ledger is tried again, a closed account fails at once.
func ExampleRetryExceptions() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(64<<20), atoll.WithNumCPUs(1), atoll.WithWorkerMode(atoll.InProcessWorkers)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	retryBusy := transfer.Options(atoll.RetryExceptions(ErrBusy), atoll.MaxRetries(3))
	v, err := atoll.Get(ctx, retryBusy.Remote(ctx, atoll.Value("alice")))
	fmt.Println(v, err)

	withdrawals.Store(0)
	_, err = atoll.Get(ctx, retryBusy.Remote(ctx, atoll.Value("closed")))
	fmt.Println("closed:", errors.Is(err, ErrAccountClosed), "attempts:", withdrawals.Load())
	// Output:
	// done on attempt 2 <nil>
	// closed: true attempts: 1
}
