package atoll_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// seqLog records calls in the order the actor ran them.
type seqLog struct{ entries []seqEntry }

type seqEntry struct {
	Caller string
	Seq    int
}

// callPlan is a handle inside a struct: who calls, how many times.
type callPlan struct {
	Log    atoll.ActorHandle[*seqLog]
	Caller string
	N      int
}

var (
	seqLogType = atoll.NewActorType("hv.seqLog", func(context.Context) (*seqLog, error) { return &seqLog{}, nil })
	seqAppend  = atoll.NewMethod1(seqLogType, "Append", func(l *seqLog, _ context.Context, e seqEntry) (int, error) {
		l.entries = append(l.entries, e)
		return len(l.entries), nil
	})
	seqEntries = atoll.NewMethod0(seqLogType, "Entries", func(l *seqLog, _ context.Context) ([]seqEntry, error) {
		return slices.Clone(l.entries), nil
	})
	// callThroughPlan makes plan.N calls through the handle in plan, all
	// sent before any is awaited, so only the calls' numbering keeps them
	// in order.
	callThroughPlan = atoll.NewFunc1("hv.callThroughPlan", func(ctx context.Context, plan callPlan) (int, error) {
		return appendAll(ctx, plan.Log, plan.Caller, plan.N)
	})
	// callThroughArg takes the handle as an argument of its own.
	callThroughArg = atoll.NewFunc2("hv.callThroughArg", func(ctx context.Context, h atoll.ActorHandle[*seqLog], caller string) (int, error) {
		return appendAll(ctx, h, caller, 5)
	})
	// decodeAsWrongType receives a seqLog handle as a handle to another
	// type.
	decodeAsWrongType = atoll.NewFunc1("hv.decodeAsWrongType", func(ctx context.Context, h atoll.ActorHandle[*tally]) (int, error) {
		return 0, nil
	})

	relayType = atoll.NewActorType("hv.relay", func(context.Context) (*relay, error) { return &relay{}, nil })
	// relayKeep stores a handle in the relay actor's state; relayCall
	// calls through it later.
	relayKeep = atoll.NewMethod1(relayType, "Keep", func(r *relay, _ context.Context, h atoll.ActorHandle[*seqLog]) (bool, error) {
		r.log = h
		return true, nil
	})
	relayCall = atoll.NewMethod1(relayType, "Call", func(r *relay, ctx context.Context, n int) (int, error) {
		return appendAll(ctx, r.log, "relay", n)
	})
	// passBack returns the handle it was given, inside a value.
	passBack = atoll.NewFunc1("hv.passBack", func(_ context.Context, plan callPlan) (callPlan, error) {
		plan.Caller = "returned"
		return plan, nil
	})
)

type relay struct{ log atoll.ActorHandle[*seqLog] }

func appendAll(ctx context.Context, h atoll.ActorHandle[*seqLog], caller string, n int) (int, error) {
	refs := make([]atoll.ObjectRef[int], n)
	for i := range refs {
		refs[i] = seqAppend.Remote(ctx, h, atoll.Value(seqEntry{Caller: caller, Seq: i + 1}))
	}
	got, err := atoll.GetAll(ctx, refs)
	if err != nil {
		return 0, err
	}
	return len(got), nil
}

// checkCallerOrder fails unless every caller's entries are 1..n in order.
func checkCallerOrder(t *testing.T, entries []seqEntry, want map[string]int) {
	t.Helper()
	next := map[string]int{}
	for _, e := range entries {
		next[e.Caller]++
		if e.Seq != next[e.Caller] {
			t.Fatalf("caller %s: call %d ran as the %d-th: %v", e.Caller, e.Seq, next[e.Caller], entries)
		}
	}
	for c, n := range want {
		if next[c] != n {
			t.Fatalf("caller %s made %d calls, want %d", c, next[c], n)
		}
	}
}

func checkHandlesAsValues(ctx context.Context, t *testing.T) {
	log, err := seqLogType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("AsArgumentAndInsideAStruct", func(t *testing.T) {
		if n, err := atoll.Get(ctx, callThroughArg.Remote(ctx, atoll.Value(log), atoll.Value("arg"))); err != nil || n != 5 {
			t.Fatalf("task calling through a handle argument: %d, %v", n, err)
		}
		if n, err := atoll.Get(ctx, callThroughPlan.Remote(ctx, atoll.Value(callPlan{Log: log, Caller: "plan", N: 5}))); err != nil || n != 5 {
			t.Fatalf("task calling through a handle in a struct: %d, %v", n, err)
		}
	})
	t.Run("TwoCallersKeepTheirOrder", func(t *testing.T) {
		const n = 60
		a := callThroughPlan.Remote(ctx, atoll.Value(callPlan{Log: log, Caller: "a", N: n}))
		b := callThroughPlan.Remote(ctx, atoll.Value(callPlan{Log: log, Caller: "b", N: n}))
		// The driver calls too, through its own handle, meanwhile.
		if _, err := appendAll(ctx, log, "driver", n); err != nil {
			t.Fatal(err)
		}
		if got, err := atoll.GetAll(ctx, []atoll.ObjectRef[int]{a, b}); err != nil || got[0] != n || got[1] != n {
			t.Fatalf("callers: %v, %v", got, err)
		}
	})
	t.Run("ToAnotherActor", func(t *testing.T) {
		r, err := relayType.New(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := atoll.Get(ctx, relayKeep.Remote(ctx, r, atoll.Value(log))); err != nil || !ok {
			t.Fatalf("relay keeping the handle: %v", err)
		}
		if n, err := atoll.Get(ctx, relayCall.Remote(ctx, r, atoll.Value(7))); err != nil || n != 7 {
			t.Fatalf("relay calling through its kept handle: %d, %v", n, err)
		}
	})
	t.Run("ReturnedInsideAValue", func(t *testing.T) {
		plan, err := atoll.Get(ctx, passBack.Remote(ctx, atoll.Value(callPlan{Log: log, N: 3})))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Log.ID() != log.ID() || plan.Caller != "returned" {
			t.Fatalf("returned handle %s (%q), want %s", plan.Log.ID(), plan.Caller, log.ID())
		}
		if _, err := appendAll(ctx, plan.Log, "returned", 3); err != nil {
			t.Fatalf("calling through a returned handle: %v", err)
		}
	})
	t.Run("WrongTypeIsRefused", func(t *testing.T) {
		_, err := atoll.Get(ctx, decodeAsWrongType.Remote(ctx, atoll.Value(atoll.ActorHandle[*tally]{})))
		if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "zero ActorHandle") {
			t.Fatalf("passing a zero handle: %v", err)
		}
		// A seqLog handle decoded as a handle to a tally (gob matches
		// fields by name).
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(callPlan{Log: log}); err != nil {
			t.Fatal(err)
		}
		var wrong wrongPlan
		err = gob.NewDecoder(&buf).Decode(&wrong)
		if err == nil || !strings.Contains(err.Error(), "decoded as ActorHandle") {
			t.Fatalf("a handle decoded as the wrong actor type: %v", err)
		}
	})
	entries, err := atoll.Get(ctx, seqEntries.Remote(ctx, log))
	if err != nil {
		t.Fatal(err)
	}
	checkCallerOrder(t, entries, map[string]int{"arg": 5, "plan": 5, "a": 60, "b": 60, "driver": 60, "relay": 7, "returned": 3})
}

// wrongPlan has the same shape as callPlan with a handle to another
// actor type.
type wrongPlan struct {
	Log    atoll.ActorHandle[*tally]
	Caller string
	N      int
}

// TestPassedHandleToAGoneActor: a handle to a killed actor, or to one the
// GCS never knew, fails its calls with ActorDiedError instead of waiting;
// a malformed encoding is refused.
func TestPassedHandleToAGoneActor(t *testing.T) {
	ctx := start(t)
	log, err := seqLogType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendAll(ctx, log, "before", 1); err != nil {
		t.Fatal(err)
	}
	if err := atoll.Kill(ctx, log); err != nil {
		t.Fatal(err)
	}
	_, err = atoll.Get(ctx, callThroughPlan.Remote(ctx, atoll.Value(callPlan{Log: log, Caller: "late", N: 2})))
	// The task fails with the ActorDiedError its call got (atoll's own
	// errors are not registered: the TaskError carries its message).
	if !errors.Is(err, atoll.ErrTask) || !strings.Contains(err.Error(), "died: killed by atoll.Kill") {
		t.Fatalf("calls through a passed handle to a killed actor: %v", err)
	}

	unknown := mustMarshal(t, &atollpb.ActorHandleValue{ActorId: bytes.Repeat([]byte{7}, 16), ActorType: "hv.seqLog"})
	var h atoll.ActorHandle[*seqLog]
	if err := h.GobDecode(unknown); err != nil {
		t.Fatalf("decoding a well-formed handle: %v", err)
	}
	if _, err := atoll.Get(ctx, seqAppend.Remote(ctx, h, atoll.Value(seqEntry{Caller: "ghost", Seq: 1}))); !errors.Is(err, atoll.ErrActorDied) ||
		!strings.Contains(err.Error(), "does not know this actor") {
		t.Fatalf("a call to an actor the GCS does not know: %v", err)
	}

	for _, bad := range [][]byte{{0xff, 0x01}, unknown[len(runtime.ActorHandleMarker):], mustMarshal(t, &atollpb.ActorHandleValue{ActorId: []byte{1, 2}, ActorType: "hv.seqLog"}),
		mustMarshal(t, &atollpb.ActorHandleValue{ActorId: bytes.Repeat([]byte{7}, 16), ActorType: "hv.nonesuch"}),
		make([]byte, 5<<10)} {
		var h atoll.ActorHandle[*seqLog]
		if err := h.GobDecode(bad); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Fatalf("decoding % x...: %v", bad[:min(len(bad), 8)], err)
		}
	}
}

// mustMarshal encodes m as ActorHandle.GobEncode does: the marker, then
// the protobuf.
func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(nil), runtime.ActorHandleMarker...), b...)
}

func TestActorHandlesAsValuesGoroutineWorkers(t *testing.T) {
	checkHandlesAsValues(start(t), t)
}

func TestActorHandlesAsValuesProcessWorkers(t *testing.T) {
	checkHandlesAsValues(startProcesses(t), t)
}
