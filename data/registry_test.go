package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// mustPanic runs f and checks that it panics with a message holding want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Errorf("panic %v, want one saying %q", r, want)
		}
	}()
	f()
}

func sameBatch(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	rec.Retain()
	return rec, nil
}

func sameRow(_ context.Context, r data.Row) (data.Row, error) { return r, nil }

var (
	_ = data.RegisterBatchFunc("test.dup", sameBatch)
	_ = data.RegisterRowFunc("test.dup", sameRow)
	_ = data.RegisterPredicate("test.dup", func(context.Context, data.Row) (bool, error) { return true, nil })
	_ = data.RegisterColumnFunc("test.dup", func(context.Context, arrow.RecordBatch) (arrow.Array, error) { return nil, nil })
	_ = data.RegisterFlatMapFunc("test.dup", func(_ context.Context, r data.Row) ([]data.Row, error) { return []data.Row{r}, nil })
	_ = data.RegisterBatchClass("test.dup", setupModel, func(_ context.Context, _ *model, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		return sameBatch(context.Background(), rec)
	})
)

// Each sort of function is a namespace: the name test.dup is taken once
// in each (above), and a second registration in any of them panics.
func TestDuplicateRegistrationPanics(t *testing.T) {
	mustPanic(t, `atoll: data batch function "test.dup" registered twice`, func() { data.RegisterBatchFunc("test.dup", sameBatch) })
	mustPanic(t, `atoll: data row function "test.dup" registered twice`, func() { data.RegisterRowFunc("test.dup", sameRow) })
	mustPanic(t, `atoll: data predicate "test.dup" registered twice`, func() {
		data.RegisterPredicate("test.dup", func(context.Context, data.Row) (bool, error) { return false, nil })
	})
	mustPanic(t, `atoll: data column function "test.dup" registered twice`, func() {
		data.RegisterColumnFunc("test.dup", func(context.Context, arrow.RecordBatch) (arrow.Array, error) { return nil, nil })
	})
	mustPanic(t, `atoll: data flat-map function "test.dup" registered twice`, func() {
		data.RegisterFlatMapFunc("test.dup", func(context.Context, data.Row) ([]data.Row, error) { return nil, nil })
	})
	mustPanic(t, `atoll: data batch class "test.dup" registered twice`, func() {
		data.RegisterBatchClass("test.dup", func(context.Context) (int, error) { return 0, nil },
			func(_ context.Context, _ int, rec arrow.RecordBatch) (arrow.RecordBatch, error) { return rec, nil })
	})
	mustPanic(t, `atoll: every data row function needs a name`, func() { data.RegisterRowFunc("", sameRow) })
}

// Registered in the driver only, as a program that registers after
// atoll.Init does: worker processes never know them.
var (
	latePredicate = sync.OnceValue(func() *data.Predicate {
		return data.RegisterPredicate("test.latePredicate", func(context.Context, data.Row) (bool, error) { return true, nil })
	})
	lateClass = sync.OnceValue(func() *data.BatchClass {
		return data.RegisterBatchClass("test.lateClass", setupModel, func(_ context.Context, m *model, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			return tagBatch(m, rec), nil
		})
	})
)

func isNotRegistered(t *testing.T, err error, kind, name string) {
	t.Helper()
	var nr *data.NotRegisteredError
	if !errors.As(err, &nr) || nr.Kind != kind || nr.Name != name || !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("%v, want a NotRegisteredError for the %s %q", err, kind, name)
	}
}

// A function the worker process running an operation does not know is
// a NotRegisteredError of its sort, in a task or in an actor pool's
// setup (TestErrorsFromWorkers has a row function's).
func TestNotRegisteredInWorker(t *testing.T) {
	ctx := start(t)
	_, err := data.Range(4).FilterFunc(latePredicate()).Count(ctx)
	isNotRegistered(t, err, "data predicate", "test.latePredicate")
	_, err = data.Range(4).MapBatches(lateClass(), data.ActorPool(1, 1)).Count(ctx)
	isNotRegistered(t, err, "data batch class", "test.lateClass")
}

// In the driver, an operation given a handle that no Register function
// made (a zero value) fails the run before anything is submitted.
func TestNotRegisteredInDriver(t *testing.T) {
	ctx := start(t)
	for name, ds := range map[string]*data.Dataset{
		"data row function":      data.Range(4).Map(new(data.RowFunc)),
		"data predicate":         data.Range(4).FilterFunc(new(data.Predicate)),
		"data column function":   data.Range(4).AddColumn("c", new(data.ColumnFunc)),
		"data flat-map function": data.Range(4).FlatMap(new(data.FlatMapFunc)),
	} {
		_, err := ds.Count(ctx)
		isNotRegistered(t, err, name, "")
		if !errors.Is(err, atoll.ErrInvalidArgument) || errors.Is(err, atoll.ErrTask) {
			t.Errorf("%s: %v, want an invalid argument and no task run", name, err)
		}
	}
}
