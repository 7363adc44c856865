package objectstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// storeScenario drives a Store with a small script, one command per step,
// and compares what the Store answers (plus its effects) with the expected
// text. Objects are named o1, o2…, clients c1, c2…; the clock starts at 0
// and moves with "tick <ms>".
//
//	create <obj> <size> <client> [wait=<ms>] [owner=<client>] → "@<offset>" | "queued" | "error <CODE>"
//	seal|abort <obj> <client>                 → "ok" | "error <CODE>"
//	get <client> <obj>...                     → "<obj>@<offset>" or "<obj>:missing" each
//	release <client> <obj>...                 → "ok" | "error"
//	delete <obj>...                           → ""
//	disconnect <client>                       → ""
//	tick <ms>                                 → "" (expires queued creations)
//	stats                                     → "used=<n> objects=<n> sealed=<n> pinned=<n> pending=<n>"
//
// Effects follow the answer: "| admitted <obj>@<off>", "| failed <obj> <CODE>",
// "| freed <off>+<size>".
type storeScenario struct {
	t     *testing.T
	s     *Store
	now   time.Time
	token uint64
	// batches and restores seen in the effects, for spilled/restored.
	batches map[uint64][]Location
	// diskTotal is the spill disk's size of the last "space" command.
	diskTotal uint64
}

func objID(name string) ids.ObjectID {
	var id ids.ObjectID
	copy(id[:], name)
	return id
}

func clientID(name string) ids.WorkerID {
	var id ids.WorkerID
	copy(id[:], name)
	return id
}

func objName(id ids.ObjectID) string { return strings.TrimRight(string(id[:]), "\x00") }

func errCode(err error) string {
	if errors.Is(err, ErrObjectExists) {
		return "error EXISTS"
	}
	var full *errs.ObjectStoreFullError
	if errors.As(err, &full) && full.Resource != "" {
		return "error OBJECT_STORE_FULL/" + string(full.Resource)
	}
	return "error " + errs.ToProto(err).Code.String()
}

func (sc *storeScenario) step(cmd string) string {
	f := strings.Fields(cmd)
	var out string
	switch f[0] {
	case "create":
		size, _ := strconv.ParseUint(f[2], 10, 64)
		deadline := sc.now.Add(time.Hour)
		var owner ids.WorkerID
		for _, opt := range f[4:] {
			if ms, ok := strings.CutPrefix(opt, "wait="); ok {
				n, _ := strconv.Atoi(ms)
				deadline = sc.now.Add(time.Duration(n) * time.Millisecond)
			} else if c, ok := strings.CutPrefix(opt, "owner="); ok {
				owner = clientID(c)
			}
		}
		sc.token++
		req := CreateRequest{ID: objID(f[1]), Size: size, Codec: atollpb.Codec_CODEC_BYTES, Client: clientID(f[3]), Owner: owner, Deadline: deadline, Token: sc.token}
		loc, queued, err := sc.s.Create(req, sc.now)
		switch {
		case err != nil:
			out = errCode(err)
		case queued:
			out = "queued"
		default:
			out = fmt.Sprintf("@%d", loc.Offset)
		}
	case "seal", "abort":
		op := sc.s.Seal
		if f[0] == "abort" {
			op = sc.s.Abort
		}
		out = "ok"
		if err := op(objID(f[1]), clientID(f[2]), sc.now); err != nil {
			out = errCode(err)
		}
	case "get":
		var list []ids.ObjectID
		for _, n := range f[2:] {
			list = append(list, objID(n))
		}
		res := sc.s.Get(list, clientID(f[1]), sc.now)
		missing := map[int]bool{}
		for _, i := range res.Missing {
			missing[i] = true
		}
		spilled := map[int]bool{}
		for _, i := range res.Spilled {
			spilled[i] = true
		}
		var parts []string
		for i, n := range f[2:] {
			if spilled[i] {
				parts = append(parts, n+":spilled")
			} else if missing[i] {
				parts = append(parts, n+":missing")
			} else {
				parts = append(parts, fmt.Sprintf("%s@%d", n, res.Locations[i].Offset))
			}
		}
		out = strings.Join(parts, " ")
	case "release":
		var list []ids.ObjectID
		for _, n := range f[2:] {
			list = append(list, objID(n))
		}
		err, panicked := catch(func() error { return sc.s.Release(list, clientID(f[1]), sc.now) })
		switch {
		case panicked && invariantsEnabled, err != nil && !invariantsEnabled:
			out = "error"
		case err != nil || panicked:
			sc.t.Fatalf("release: err %v panicked %v with invariants %v", err, panicked, invariantsEnabled)
		default:
			out = "ok"
		}
	case "delete":
		var list []ids.ObjectID
		for _, n := range f[1:] {
			list = append(list, objID(n))
		}
		sc.s.Delete(list, sc.now)
	case "disconnect":
		sc.s.ClientDisconnected(clientID(f[1]), sc.now)
	case "tick":
		ms, _ := strconv.Atoi(f[1])
		sc.now = sc.now.Add(time.Duration(ms) * time.Millisecond)
		sc.s.ExpirePending(sc.now)
	case "stats":
		st := sc.s.Stats()
		out = fmt.Sprintf("used=%d objects=%d sealed=%d pinned=%d pending=%d", st.UsedBytes, st.NumObjects, st.NumSealed, st.PinnedBytes, st.PendingCreates)
	default:
		var ok bool
		if out, ok = sc.spillStep(f); !ok {
			sc.t.Fatalf("unknown command %q", cmd)
		}
	}
	eff := sc.s.TakeEffects()
	for _, r := range eff.Freed {
		out += fmt.Sprintf(" | freed %d+%d", r.Offset, r.Size)
	}
	for _, c := range eff.Completions {
		if c.Err != nil {
			out += fmt.Sprintf(" | failed %s %s", objName(c.ID), strings.TrimPrefix(errCode(c.Err), "error "))
		} else {
			out += fmt.Sprintf(" | admitted %s@%d", objName(c.ID), c.Location.Offset)
		}
	}
	out += sc.spillEffects(eff)
	if err := sc.s.check(); err != nil {
		sc.t.Fatalf("after %q: %v", cmd, err)
	}
	return strings.TrimPrefix(out, " | ")
}

// step is one command and its expected answer.
type step struct{ cmd, want string }

func TestStoreScenarios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"create seal get release delete", []step{
			{"create o1 100 c1", "@0"},
			{"get c2 o1", "o1:missing"}, // unsealed objects are invisible
			{"seal o1 c1", "ok"},
			{"get c2 o1 o1", "o1@0 o1@0"},
			{"stats", "used=128 objects=1 sealed=1 pinned=128 pending=0"},
			{"delete o1", ""}, // pinned: freed at the last release
			{"get c3 o1", "o1:missing"},
			{"release c2 o1", "ok"},
			{"release c2 o1", "ok | freed 0+128"},
			{"stats", "used=0 objects=0 sealed=0 pinned=0 pending=0"},
		}},
		{"errors", []step{
			{"create o1 10 c1", "@0"},
			{"create o1 10 c2", "error EXISTS"},
			{"seal o1 c2", "error INVALID_ARGUMENT"},
			{"seal o9 c1", "error NOT_FOUND"},
			{"seal o1 c1", "ok"},
			{"seal o1 c1", "error INVALID_ARGUMENT"},
			{"abort o1 c1", "error INVALID_ARGUMENT"},
			{"release c1 o1", "error"}, // the creator holds no pin once sealed
			{"create o2 2000 c1", "error OBJECT_STORE_FULL/memory"},
			{"delete o7 o1", "freed 0+64"},
			{"stats", "used=0 objects=0 sealed=0 pinned=0 pending=0"},
		}},
		{"backpressure FIFO", []step{
			{"create o1 512 c1", "@0"},
			{"create o2 512 c1", "@512"},
			{"seal o1 c1", "ok"},
			{"seal o2 c1", "ok"},
			{"create o3 1024 c2", "queued"},
			{"create o4 64 c2", "queued"}, // would fit after a free, but waits behind o3
			{"delete o1", "freed 0+512"},  // o3 still does not fit, o4 must not overtake it
			{"stats", "used=512 objects=1 sealed=1 pinned=0 pending=2"},
			{"delete o2", "freed 512+512 | admitted o3@0"},
			{"abort o3 c2", "ok | freed 0+1024 | admitted o4@0"},
		}},
		{"expiry", []step{
			{"create o1 1024 c1", "@0"},
			{"create o2 64 c2 wait=50", "queued"},
			{"create o3 64 c2 wait=0", "error OBJECT_STORE_FULL/memory"},
			{"create o4 64 c2 wait=100", "queued"},
			{"tick 49", ""},
			{"tick 1", "failed o2 OBJECT_STORE_FULL/memory"},
			{"abort o1 c1", "ok | freed 0+1024 | admitted o4@0"},
			{"tick 100", ""},
		}},
		{"abort queued creation", []step{
			{"create o1 1024 c1", "@0"},
			{"create o2 64 c2", "queued"},
			{"abort o2 c1", "error NOT_FOUND"}, // not c1's creation
			{"abort o2 c2", "ok | failed o2 UNAVAILABLE"},
			{"stats", "used=1024 objects=1 sealed=0 pinned=0 pending=0"},
		}},
		{"delete unsealed frees at seal", []step{
			{"create o1 64 c1", "@0"},
			{"delete o1", ""},
			{"seal o1 c1", "ok | freed 0+64"},
			{"get c1 o1", "o1:missing"},
		}},
		{"disconnect reclaims pins, creations and queue", []step{
			{"create o1 256 c1", "@0"},
			{"seal o1 c1", "ok"},
			{"create o2 256 c2", "@256"},
			{"get c2 o1", "o1@0"},
			{"get c3 o1", "o1@0"},
			{"delete o1", ""},
			{"create o3 1024 c2", "queued"},
			{"create o4 512 c3", "queued"},
			{"disconnect c2", "freed 256+256 | failed o3 UNAVAILABLE | admitted o4@256"},
			{"stats", "used=768 objects=2 sealed=1 pinned=256 pending=0"},
			{"disconnect c3", "freed 0+256 | freed 256+512"},
			{"stats", "used=0 objects=0 sealed=0 pinned=0 pending=0"},
		}},
		{"zero-size objects get distinct blocks", []step{
			{"create o1 0 c1", "@0"},
			{"create o2 0 c1", "@64"},
			{"seal o1 c1", "ok"},
			{"seal o2 c1", "ok"},
			{"delete o1 o2", "freed 0+64 | freed 64+64"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &storeScenario{t: t, s: NewStore(1024), now: time.Unix(0, 0)}
			for i, st := range tc.steps {
				if got := sc.step(st.cmd); got != st.want {
					t.Fatalf("step %d %q:\n got  %q\n want %q", i, st.cmd, got, st.want)
				}
			}
		})
	}
}

func TestStoreObjectExistsError(t *testing.T) {
	s := NewStore(1024)
	req := CreateRequest{ID: objID("o1"), Size: 1, Client: clientID("c1")}
	if _, _, err := s.Create(req, time.Time{}); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Create(req, time.Time{})
	if !errors.Is(err, ErrObjectExists) || !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "object exists") {
		t.Fatalf("err = %v", err)
	}
	info := errs.ToProto(err)
	if info.Code != atollpb.ErrorCode_INVALID_ARGUMENT || !errors.Is(fromProto(info), ErrObjectExists) {
		t.Fatalf("wire form %v does not round-trip", info)
	}
}

func TestStoreFullErrorDetails(t *testing.T) {
	s := NewStore(1024)
	_, _, err := s.Create(CreateRequest{ID: objID("o1"), Size: 4096, Client: clientID("c1")}, time.Time{})
	var full *errs.ObjectStoreFullError
	if !errors.As(err, &full) || full.Requested != 4096 || full.Capacity != 1024 || full.Used != 0 {
		t.Fatalf("err = %#v", err)
	}
	if s.Stats().FailedCreatesTotal != 1 {
		t.Fatalf("failed creates not counted: %v", s.Stats())
	}
}

func TestDisconnectFreesTheObjectsTheClientOwned(t *testing.T) {
	s := NewStore(1 << 20)
	now := time.Unix(0, 0)
	worker, driver := ids.NewWorkerID(), ids.NewWorkerID()
	owned := ids.PutObjectID(ids.NewTaskID(), 1)
	foreign := ids.ReturnObjectID(ids.NewTaskID(), 0)
	for _, c := range []struct {
		id    ids.ObjectID
		owner ids.WorkerID
	}{{owned, worker}, {foreign, driver}} {
		if _, queued, err := s.Create(CreateRequest{ID: c.id, Size: 4096, Client: worker, Owner: c.owner}, now); err != nil || queued {
			t.Fatalf("create: %v queued=%v", err, queued)
		}
		if err := s.Seal(c.id, worker, now); err != nil {
			t.Fatal(err)
		}
	}
	// The driver reads the worker-owned object: it stays until unpinned.
	if res := s.Get([]ids.ObjectID{owned}, driver, now); len(res.Missing) != 0 {
		t.Fatalf("get: %+v", res)
	}
	s.ClientDisconnected(worker, now)
	if s.Len() != 2 {
		t.Fatalf("%d objects after the owner died with a pin held, want 2", s.Len())
	}
	if err := s.Release([]ids.ObjectID{owned}, driver, now); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 1 || s.Used() != BlockSize(4096) {
		t.Fatalf("after the last pin: %d objects, %d bytes used; want only the driver-owned object", s.Len(), s.Used())
	}
	if res := s.Get([]ids.ObjectID{foreign}, driver, now); len(res.Missing) != 0 {
		t.Fatal("the object owned by another client was freed")
	}
}
