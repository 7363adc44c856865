package microbench

import (
	"context"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

func TestObjectTable(t *testing.T) {
	tb := newObjectTable()
	a := tb.put([]byte{7}, nil)
	if v, ok := tb.get(a); !ok || !slices.Equal(v, []byte{7}) {
		t.Fatalf("get: %v %v", v, ok)
	}
	b := tb.put(nil, []uint64{a})
	borrowed, err := tb.borrowContained(b)
	if err != nil || len(borrowed) != 1 || borrowed[0].refs != 2 {
		t.Fatalf("borrow: %v %v", borrowed, err)
	}
	tb.release(a)
	tb.release(a)
	if _, ok := tb.get(a); ok {
		t.Fatal("released twice, still there")
	}
	if _, err := tb.borrowContained(b); err == nil {
		t.Fatal("borrowed a deleted object")
	}
	tb.putRelease()
	if len(tb.m) != 1 {
		t.Fatalf("putRelease left %d entries, want only the container", len(tb.m))
	}
}

func TestChanWorkload(t *testing.T) {
	ctx := context.Background()
	for _, clients := range []int{1, 3} {
		w := chanWorkload(2, clients, 50, 1)
		for range 3 {
			if err := w.op(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEcho(t *testing.T) {
	e := &env{shapes: tinyShapes, cpus: 2}
	defer e.close()
	ec, err := newEcho(e.actorSystem(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ec.close(context.Background()) }()
	fs := []actor.Future{ec.request(ec.pids[0], 1), ec.request(ec.pids[1], 2)}
	for _, f := range fs {
		r, err := f.Result()
		if p, ok := r.(*pong); err != nil || !ok || string(p.data) != "ok" {
			t.Fatalf("reply %v %v", r, err)
		}
	}
}

func TestCopyPool(t *testing.T) {
	p := newCopyPool(1, 1000)
	p.dsts[0][10] = -1
	p.run(3, 2)
	if p.dsts[0][10] != 10 {
		t.Fatal("copies not made")
	}
}
