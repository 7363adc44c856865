package objectstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// Spill commands of storeScenario (the store spills as the scenario's
// policy says; files are named f<batch>):
//
//	spilled <batch> [error] [space=<free>]                   → SpillDone (after noting the disk's free bytes)
//	space <free> <total>                                     → SetDiskSpace
//	restore <obj> <client> [prio=<n>] [wait=<ms>] [token=<n>] [pins=<n>] → "ok" | "error <CODE>"
//	restored <ticket> [error]                                → RestoreDone
//	disk                                                     → "disk=<bytes>/<objects> files=<n> spilling=<n> restores=<n>"
//	counters                                                 → the spill counters of Stats
//
// and their effects: "| spill b<n> <obj>,<obj>", "| restore <obj>@<off> t<ticket> p<prio>",
// "| restored <obj> <client>x<pins>..." or "| restore-failed <obj> <CODE>", "| rm <file>",
// "| punch <file>@<offset>+<length>".

// options parses key=value arguments.
func options(args []string) map[string]int {
	out := map[string]int{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			n, _ := strconv.Atoi(v)
			out[k] = n
		}
	}
	return out
}

func (sc *storeScenario) spillStep(f []string) (string, bool) {
	switch f[0] {
	case "spilled":
		batch, _ := strconv.ParseUint(f[1], 10, 64)
		var w spill.Written
		var err error
		if free, ok := options(f[2:])["space"]; ok {
			// The spiller measured the disk right after this write.
			sc.s.noteDiskSpace(uint64(free), sc.diskTotal)
			f = f[:2]
		}
		if len(f) > 2 {
			err = errors.New("disk full")
		} else {
			w.File = fmt.Sprintf("f%d", batch)
			for _, loc := range sc.batches[batch] {
				w.Extents = append(w.Extents, spill.Extent{File: w.File, Offset: w.Size, Length: loc.Length})
				w.Size += loc.Length
			}
			w.Size += 100 // index and footer
		}
		if err := sc.s.SpillDone(batch, w, err, sc.now); err != nil {
			return "error " + err.Error(), true
		}
		return "", true
	case "restore":
		o := options(f[3:])
		req := RestoreRequest{ID: objID(f[1]), Waiter: RestoreWaiter{Token: uint64(o["token"]), Client: clientID(f[2]), Pins: max(o["pins"], 1)}, Priority: int32(o["prio"])}
		if ms, ok := o["wait"]; ok {
			req.Deadline = sc.now.Add(time.Duration(ms) * time.Millisecond)
		}
		if err := sc.s.Restore(req, sc.now); err != nil {
			return errCode(err), true
		}
		return "ok", true
	case "restored":
		ticket, _ := strconv.ParseUint(f[1], 10, 64)
		var err error
		if len(f) > 2 {
			err = errors.New("EIO")
		}
		if err := sc.s.RestoreDone(ticket, err, sc.now); err != nil {
			return "error " + err.Error(), true
		}
		return "", true
	case "space":
		free, _ := strconv.ParseUint(f[1], 10, 64)
		sc.diskTotal, _ = strconv.ParseUint(f[2], 10, 64)
		sc.s.SetDiskSpace(free, sc.diskTotal, sc.now)
		return "", true
	case "disk":
		st := sc.s.Stats()
		return fmt.Sprintf("disk=%d/%d files=%d spilling=%d restores=%d", st.SpilledBytesCurrent, st.SpilledObjectsCurrent, st.SpillFilesCurrent, st.SpillingBytes, st.PendingRestores), true
	case "counters":
		st := sc.s.Stats()
		return fmt.Sprintf("spilled=%d/%d restored=%d/%d errors=%d/%d fallback=%d/%d",
			st.SpilledBytesTotal, st.SpilledObjectsTotal, st.RestoredBytesTotal, st.RestoredObjectsTotal,
			st.SpillErrorsTotal, st.RestoreErrorsTotal, st.FallbackCreatesTotal, st.FallbackBytesTotal), true
	}
	return "", false
}

func (sc *storeScenario) spillEffects(eff Effects) string {
	var out strings.Builder
	for _, b := range eff.Spills {
		if sc.batches == nil {
			sc.batches = map[uint64][]Location{}
		}
		sc.batches[b.ID] = b.Objects
		names := make([]string, len(b.Objects))
		for i, loc := range b.Objects {
			names[i] = objName(loc.ID)
		}
		fmt.Fprintf(&out, " | spill b%d %s", b.ID, strings.Join(names, ","))
	}
	for _, r := range eff.Restores {
		fmt.Fprintf(&out, " | restore %s@%d t%d p%d", objName(r.Location.ID), r.Location.Offset, r.Ticket, r.Priority)
	}
	for _, r := range eff.Restored {
		if r.Err != nil {
			fmt.Fprintf(&out, " | restore-failed %s %s", objName(r.ID), strings.TrimPrefix(errCode(r.Err), "error "))
			continue
		}
		fmt.Fprintf(&out, " | restored %s@%d", objName(r.ID), r.Location.Offset)
		for _, w := range r.Waiters {
			fmt.Fprintf(&out, " %sx%d", strings.TrimRight(string(w.Client[:]), "\x00"), w.Pins)
		}
	}
	for _, name := range eff.RemoveFiles {
		fmt.Fprintf(&out, " | rm %s", name)
	}
	for _, e := range eff.Punches {
		fmt.Fprintf(&out, " | punch %s@%d+%d", e.File, e.Offset, e.Length)
	}
	return out.String()
}

func TestSpillScenarios(t *testing.T) {
	// Capacity 1024, threshold 0.5 (512), batches of at most 256 bytes or
	// 2 objects. Objects of 128 bytes fill 128-byte blocks.
	policy := SpillPolicy{Threshold: 0.5, BatchBytes: 256, MaxObjects: 2}
	fill := []step{
		{"create o1 128 c1", "@0"}, {"seal o1 c1", "ok"},
		{"create o2 128 c1", "@128"}, {"seal o2 c1", "ok"},
		{"create o3 128 c1", "@256"}, {"seal o3 c1", "ok"},
		{"create o4 128 c1", "@384"}, {"seal o4 c1", "ok"},
	}
	for _, tc := range []struct {
		name   string
		policy SpillPolicy
		steps  []step
	}{
		{"threshold spills LRU in fused batches", policy, append(fill[:8:8], []step{
			{"tick 1", ""},
			{"get c2 o1", "o1@0"}, // o1 is pinned, and the most recently used
			{"release c2 o1", "ok"},
			// 640 > 512: spill down to 512 less a batch (256): 384 bytes.
			{"create o5 128 c1", "@512 | spill b1 o2,o3 | spill b2 o4"},
			{"disk", "disk=0/0 files=0 spilling=384 restores=0"},
			{"get c2 o2", "o2@128"}, // readable while being written
			{"spilled 1", "freed 256+128"},
			{"disk", "disk=256/2 files=1 spilling=128 restores=0"},
			{"get c3 o2 o3", "o2@128 o3:spilled"},
			{"spilled 2", "freed 384+128"},
			{"spilled 2", "error " + errStaleIO.Error()},
			{"stats", "used=384 objects=5 sealed=4 pinned=128 pending=0"},
			{"counters", "spilled=384/3 restored=0/0 errors=0/0 fallback=0/0"},
			// o2 was pinned during its write: both copies; releasing it
			// does not write it again.
			{"release c2 o2", "ok"},
			{"release c3 o2", "ok"},
			{"delete o3 o4", "rm f2 | punch f1@128+4096"}, // o2 lives on in f1
			{"delete o2", "freed 128+128 | rm f1"},
			{"disk", "disk=0/0 files=0 spilling=0 restores=0"},
		}...)},
		{"pinned and unsealed objects are never spilled", policy, append(fill[:8:8], []step{
			{"get c2 o1 o3", "o1@0 o3@256"},
			// 768 > 512: everything unpinned and sealed goes (256 bytes).
			{"create o5 256 c1", "@512 | spill b1 o2,o4"},
			{"spilled 1", "freed 128+128 | freed 384+128"},
			{"create o6 256 c1", "@768"}, // over again, nothing to spill: pinned or unsealed
			{"seal o5 c1", "ok | spill b2 o5"},
		}...)},
		{"a creation that does not fit spills, then is admitted", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"seal o5 c1", "ok"},
			{"create o6 200 c2", "queued | spill b1 o1,o2"},
			{"create o7 64 c2", "queued | spill b2 o3"}, // room for every waiting creation
			{"stats", "used=1024 objects=5 sealed=5 pinned=0 pending=2"},
			{"spilled 2", "freed 256+128"}, // FIFO: o7 waits behind o6, which does not fit yet
			{"spilled 1", "freed 0+128 | freed 128+128 | admitted o6@0 | admitted o7@256"},
			{"counters", "spilled=384/3 restored=0/0 errors=0/0 fallback=2/264"},
		}...)},
		{"full: fails at the deadline only when nothing is being spilled", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"get c2 o1 o2 o3", "o1@0 o2@128 o3@256"},
			{"create o6 200 c2 wait=50", "queued | spill b1 o4"},
			{"tick 60", ""}, // past its deadline, but o4 is being written
			{"spilled 1 error", "failed o6 OBJECT_STORE_FULL/disk"}, // the write failed
			{"counters", "spilled=0/0 restored=0/0 errors=1/0 fallback=0/0"},
			{"create o7 64 c2 wait=50", "queued"}, // backing off: no write
			{"tick 50", "failed o7 OBJECT_STORE_FULL/disk"},
			{"create o8 64 c2 wait=100", "queued"},
			{"tick 49", ""},
			{"tick 1", "spill b2 o4"}, // the back-off (100 ms from the error) is over
			{"spilled 2", "freed 384+128 | admitted o8@384"},
		}...)},
		{"restore on demand, in priority order, keeping the disk copy", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"seal o5 c1", "ok"},
			{"create o6 256 c2", "queued | spill b1 o1,o2"},
			{"spilled 1", "freed 0+128 | freed 128+128 | admitted o6@0"},
			{"get c3 o1 o2", "o1:spilled o2:spilled"},
			{"restore o1 c3 prio=0 token=1", "ok | spill b2 o3"},
			{"restore o2 c3 prio=2 token=2 pins=2", "ok | spill b3 o4"},
			{"restore o1 c4 prio=1 token=3", "ok"},
			{"disk", "disk=256/2 files=1 spilling=256 restores=2"},
			// o2 (priority 2) goes first; o1 rose to priority 1.
			{"spilled 2", "freed 256+128 | restore o2@256 t1 p2"},
			{"spilled 3", "freed 384+128 | restore o1@384 t2 p1"},
			{"get c5 o2", "o2:spilled"}, // still being read
			{"restored 2", "restored o1@384 c3x1 c4x1"},
			{"restored 1", "restored o2@256 c3x2"},
			{"stats", "used=1024 objects=6 sealed=5 pinned=256 pending=0"},
			{"counters", "spilled=512/4 restored=256/2 errors=0/0 fallback=1/256"},
			{"release c3 o1 o2 o2", "ok"},
			{"release c4 o1", "ok"},
			// Restored objects are on disk already: making room drops
			// their memory and writes nothing.
			{"create o7 128 c2", "queued | freed 384+128 | admitted o7@384"},
			{"disk", "disk=512/4 files=3 spilling=0 restores=0"},
		}...)},
		{"a failed restore leaves the object on disk", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"seal o5 c1", "ok"},
			{"create o6 128 c2", "queued | spill b1 o1"},
			{"spilled 1", "freed 0+128 | admitted o6@0"},
			{"delete o6", ""}, // unsealed: freed when sealed
			{"seal o6 c2", "ok | freed 0+128"},
			{"restore o1 c3 token=1", "ok | restore o1@0 t1 p0"},
			{"restored 1 error", "freed 0+128 | restore-failed o1 OBJECT_LOST"},
			{"get c3 o1", "o1:spilled"},
			{"restore o1 c3 token=2", "ok | restore o1@0 t2 p0"},
			{"restored 1", "error " + errStaleIO.Error()},
			{"restored 2", "restored o1@0 c3x1"},
			{"counters", "spilled=128/1 restored=128/1 errors=0/1 fallback=1/128"},
		}...)},
		{"restores wait for space and expire", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"seal o5 c1", "ok"},
			{"create o6 128 c2", "queued | spill b1 o1"},
			{"spilled 1", "freed 0+128 | admitted o6@0"},
			{"get c3 o2 o3 o4 o5", "o2@128 o3@256 o4@384 o5@512"},
			{"restore o1 c3 token=1 wait=50", "ok"}, // o6 is not sealed: nothing to spill
			{"restore o9 c3", "error NOT_FOUND"},
			{"restore o2 c3", "error INVALID_ARGUMENT"},
			{"disk", "disk=128/1 files=1 spilling=0 restores=1"},
			{"tick 50", "restore-failed o1 OBJECT_STORE_FULL/memory"},
			{"restore o1 c3 token=2", "ok"},
			{"abort o6 c2", "ok | freed 0+128 | restore o1@0 t1 p0"},
		}...)},
		{"frees during I/O wait for it; files go with their last object", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"seal o5 c1", "ok"},
			{"get c9 o5", "o5@512"},
			{"create o6 256 c2", "queued | spill b1 o1,o2"},
			{"delete o1", ""}, // being written: freed when the write lands
			{"spilled 1", "freed 0+128 | freed 128+128 | admitted o6@0 | punch f1@0+4096"},
			{"abort o6 c2", "ok | freed 0+256"},
			{"create o7 512 c2", "queued | spill b2 o3,o4"},
			{"spilled 2", "freed 256+128 | freed 384+128 | admitted o7@0"},
			{"restore o3 c3 token=1", "ok"},
			{"delete o3", "restore-failed o3 NOT_FOUND | punch f2@0+4096"}, // the queued restore is withdrawn
			{"abort o7 c2", "ok | freed 0+512"},
			{"restore o2 c3 token=2", "ok | restore o2@0 t1 p0"},
			{"delete o2", ""}, // being read: freed when the read lands
			{"restored 1", "freed 0+128 | restore-failed o2 NOT_FOUND | rm f1"},
			{"disk", "disk=128/1 files=1 spilling=0 restores=0"},
			{"delete o4", "rm f2"},
			{"disk", "disk=0/0 files=0 spilling=0 restores=0"},
		}...)},
		// A disk of 128 KiB: a reserve of 8 KiB (1/16), one file of one
		// object (a page for it, a page for the index).
		{"spilling stops at the disk's free space; restores use the reserve", SpillPolicy{Threshold: 1, BatchBytes: 1 << 20, MaxObjects: 10}, append(fill[:8:8], []step{
			{"create o5 512 c1", "@512"},
			{"seal o5 c1", "ok"},
			{"space 16384 131072", ""},
			// Room for one file of one object beyond the reserve: o2 is
			// passed over.
			{"create o6 256 c2 wait=50", "queued | spill b1 o1"},
			{"spilled 1 space=8192", "freed 0+128"},
			{"tick 50", "failed o6 OBJECT_STORE_FULL/disk"},
			{"create o8 128 c2", "@0"},
			{"seal o8 c2", "ok"},
			// A restore may use the reserve: o2 goes to make room.
			{"get c3 o1", "o1:spilled"},
			{"restore o1 c3 token=1", "ok | spill b2 o2"},
			{"spilled 2 space=0", "freed 128+128 | restore o1@128 t1 p0"},
			// The disk is full: o1 gives its disk copy back.
			{"restored 1", "restored o1@128 c3x1 | rm f1"},
			{"space 8192 131072", ""},
			{"disk", "disk=128/1 files=1 spilling=0 restores=0"},
			{"release c3 o1", "ok"},
			{"create o7 128 c2 wait=50", "queued"},
			{"tick 50", "failed o7 OBJECT_STORE_FULL/disk"},
			// f1's removal gave its space back: creations fit again.
			{"space 16384 131072", ""},
			{"create o7 128 c2", "queued | spill b3 o3"},
		}...)},
		{"disconnect frees owned spilled objects and drops its restores", SpillPolicy{Threshold: 1, BatchBytes: 256, MaxObjects: 10}, []step{
			{"create o1 256 c1 owner=c3", "@0"}, {"seal o1 c1", "ok"},
			{"create o2 256 c1", "@256"}, {"seal o2 c1", "ok"},
			{"create o3 512 c1", "@512"}, {"seal o3 c1", "ok"},
			{"get c1 o3", "o3@512"},
			{"create o4 512 c2", "queued | spill b1 o1 | spill b2 o2"},
			{"spilled 1", "freed 0+256"},
			{"spilled 2", "freed 256+256 | admitted o4@0"},
			{"restore o2 c2 token=1", "ok"},
			{"disk", "disk=512/2 files=2 spilling=0 restores=1"},
			{"disconnect c2", "freed 0+512"}, // aborts o4, drops its restore
			{"disk", "disk=512/2 files=2 spilling=0 restores=0"},
			{"disconnect c3", "rm f1"}, // o1's owner is gone
			{"disk", "disk=256/1 files=1 spilling=0 restores=0"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &storeScenario{t: t, s: NewSpillingStore(1024, tc.policy), now: time.Unix(0, 0)}
			for i, st := range tc.steps {
				if got := sc.step(st.cmd); got != st.want {
					t.Fatalf("step %d %q:\n got  %q\n want %q", i, st.cmd, got, st.want)
				}
			}
		})
	}
}

func TestRestoreFailedErrorRoundTrips(t *testing.T) {
	err := restoreFailed(objID("o1"), errors.New("EIO"))
	if !errors.Is(err, ErrRestoreFailed) || !errors.Is(err, errs.ErrObjectLost) {
		t.Fatalf("err %v does not match", err)
	}
	back := fromProto(errs.ToProto(err))
	if !errors.Is(back, ErrRestoreFailed) || !errors.Is(back, errs.ErrObjectLost) {
		t.Fatalf("after the wire: %v", back)
	}
}
