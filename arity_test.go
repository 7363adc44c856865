package atoll_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// Six arguments of six types, in worker processes: each reaches its own
// parameter (a swap of two would not compile, or would show in the
// result).

type sixOut struct {
	S   string
	Pid int
}

type arityActor struct{ base string }

// six renders six arguments in order.
func six(a int, b string, c float64, d []int, e map[string]int, f bool) string {
	return fmt.Sprint(a, " ", b, " ", c, " ", d, " ", e, " ", f)
}

var (
	aritySix = atoll.NewFunc6("arity.six", func(_ context.Context, a int, b string, c float64, d []int, e map[string]int, f bool) (sixOut, error) {
		return sixOut{six(a, b, c, d, e, f), os.Getpid()}, nil
	})
	// arityDigits returns its first n arguments, n the sixth.
	arityDigits = atoll.NewMultiFunc6("arity.digits", func(_ context.Context, a, b, c, d, e, n int) ([]int, error) {
		return []int{a, b, c, d, e, n}[:n], nil
	})
	arityActorType = atoll.NewActorType6("arity.actor", func(_ context.Context, a int, b string, c float64, d []int, e map[string]int, f bool) (*arityActor, error) {
		return &arityActor{base: six(a, b, c, d, e, f)}, nil
	})
	arityMethod = atoll.NewMethod6(arityActorType, "Six", func(x *arityActor, _ context.Context, a int, b string, c float64, d []int, e map[string]int, f bool) (sixOut, error) {
		return sixOut{x.base + " | " + six(a, b, c, d, e, f), os.Getpid()}, nil
	})
	// arityStream yields its first n arguments, n the sixth, one by one.
	arityStream = atoll.NewGenFunc6("arity.stream", func(_ context.Context, a, b, c, d, e, n int, yield func(int) error) error {
		for _, v := range []int{a, b, c, d, e, n}[:n] {
			if err := yield(v); err != nil {
				return err
			}
		}
		return nil
	})
	arityMultiMethod = atoll.NewMultiMethod6(arityActorType, "Digits", func(_ *arityActor, _ context.Context, a, b, c, d, e, n int) ([]int, error) {
		return []int{a, b, c, d, e, n}[:n], nil
	})
)

func TestSixArgumentsInWorkerProcesses(t *testing.T) {
	ctx := startProcesses(t)
	// Values and refs mixed: a ref for the slice, values for the rest.
	d, err := atoll.Put(ctx, []int{4, 5})
	if err != nil {
		t.Fatal(err)
	}
	const want = "1 two 3.5 [4 5] map[six:6] true"
	out, err := atoll.Get(ctx, aritySix.Remote(ctx, atoll.Value(1), atoll.Value("two"), atoll.Value(3.5), d,
		atoll.Value(map[string]int{"six": 6}), atoll.Value(true)))
	if err != nil || out.S != want {
		t.Fatalf("Func6: %q %v, want %q", out.S, err, want)
	}
	if out.Pid == os.Getpid() || out.Pid == 0 {
		t.Fatalf("Func6 ran in pid %d; the driver is %d", out.Pid, os.Getpid())
	}

	refs := arityDigits.Remote(ctx, 4, atoll.Value(1), atoll.Value(2), atoll.Value(3), atoll.Value(4), atoll.Value(5), atoll.Value(4))
	got, err := atoll.GetAll(ctx, refs)
	if err != nil || !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("MultiFunc6 with 4 returns: %v %v, want [1 2 3 4]", got, err)
	}

	h, err := arityActorType.New(ctx, atoll.Value(1), atoll.Value("two"), atoll.Value(3.5), d,
		atoll.Value(map[string]int{"six": 6}), atoll.Value(true))
	if err != nil {
		t.Fatal(err)
	}
	out, err = atoll.Get(ctx, arityMethod.Remote(ctx, h, atoll.Value(7), atoll.Value("eight"), atoll.Value(9.5), atoll.Value([]int{10}),
		atoll.Value(map[string]int{"twelve": 12}), atoll.Value(false)))
	if wantM := want + " | 7 eight 9.5 [10] map[twelve:12] false"; err != nil || out.S != wantM {
		t.Fatalf("ActorType6 and Method6: %q %v, want %q", out.S, err, wantM)
	}
	if out.Pid == os.Getpid() || out.Pid == 0 {
		t.Fatalf("Method6 ran in pid %d; the driver is %d", out.Pid, os.Getpid())
	}
	refs = arityMultiMethod.Remote(ctx, h, 2, atoll.Value(6), atoll.Value(5), atoll.Value(4), atoll.Value(3), atoll.Value(2), atoll.Value(2))
	got, err = atoll.GetAll(ctx, refs)
	if err != nil || !slices.Equal(got, []int{6, 5}) {
		t.Fatalf("MultiMethod6 with 2 returns: %v %v, want [6 5]", got, err)
	}
	var streamed []int
	for ref, err := range arityStream.Remote(ctx, atoll.Value(9), atoll.Value(8), atoll.Value(7), atoll.Value(6), atoll.Value(5), atoll.Value(3)).All(ctx) {
		if err != nil {
			t.Fatalf("GenFunc6: %v", err)
		}
		v, err := atoll.Get(ctx, ref)
		if err != nil {
			t.Fatalf("GenFunc6 item: %v", err)
		}
		streamed = append(streamed, v)
	}
	if !slices.Equal(streamed, []int{9, 8, 7}) {
		t.Fatalf("GenFunc6 yielded %v, want [9 8 7]", streamed)
	}
	// A function that returns another count than the call asked for
	// fails the call.
	_, err = atoll.Get(ctx, arityDigits.Remote(ctx, 3, atoll.Value(1), atoll.Value(2), atoll.Value(3), atoll.Value(4), atoll.Value(5), atoll.Value(2))[0])
	if err == nil {
		t.Fatal("MultiFunc6 returning 2 values for a call that asked 3 succeeded")
	}
}
