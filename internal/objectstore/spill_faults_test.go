package objectstore

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// Tests of spilling with a faulty file system under the spill target.

func faultyTarget(t *testing.T, dirs ...string) (*spill.FaultyFS, spill.Target) {
	t.Helper()
	fs := spill.NewFaultyFS(spill.OS)
	tgt, err := spill.NewLocal(dirs, spill.LocalOptions{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	return fs, tgt
}

func TestSpillToFullDiskLosesNothing(t *testing.T) {
	dir := t.TempDir()
	fs, tgt := faultyTarget(t, dir)
	fs.Inject(spill.DiskFull(-1))
	ts := startStore(t, 2<<20, Config{SpillTarget: tgt, SpillThreshold: 0.5, SpillBatchBytes: 256 << 10, CreateTimeout: 300e6})
	c := ts.client()
	rng := rand.New(rand.NewPCG(5, 5))
	sums, alive := putObjects(t, c, rng, 6, 256<<10)
	testutil.Eventually(t, "a failed spill", func() bool { return ts.stats().SpillErrorsTotal > 0 })
	// Nothing can be spilled: a creation that does not fit fails at its
	// deadline, its error blaming the disk and giving the write's error,
	// and every object is still there, intact.
	_, err := c.Create(bg, newObjectID(), 768<<10, atollpb.Codec_CODEC_BYTES)
	var full *errs.ObjectStoreFullError
	if !errors.Is(err, errs.ErrObjectStoreFull) || !errors.As(err, &full) || full.Resource != errs.StoreDisk ||
		!strings.Contains(err.Error(), "spill writes failed") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("creation with the disk full: %v", err)
	}
	checkObjects(t, c, sums, rng)
	st := ts.stats()
	if st.SpilledObjectsTotal != 0 || st.SpillFilesCurrent != 0 || st.UsedBytes != 6*(256<<10) {
		t.Fatalf("with the disk full: %v", st)
	}
	if n, _ := spillFilesIn(t, dir); n != 0 {
		t.Fatalf("failed writes left %d files", n)
	}
	checkAccounting(t, ts, alive, dir)

	// The disk has room again: after its back-off the store spills, and
	// the creation that failed now succeeds.
	fs.Clear()
	testutil.Eventually(t, "a spill after the disk recovered", func() bool { return ts.stats().SpilledObjectsTotal > 0 })
	id, sum := putObject(t, c, rng, 768<<10)
	sums[id], alive[id] = sum, 768<<10
	checkObjects(t, c, sums, rng)
	st = ts.stats()
	if st.SpillErrorsTotal != uint64(fs.Fired(spill.OpWrite)) || st.RestoredObjectsTotal == 0 {
		t.Fatalf("%d failed writes, stats %v", fs.Fired(spill.OpWrite), st)
	}
	checkAccounting(t, ts, alive, dir)
}

func TestSpillSkipsAFullDirectory(t *testing.T) {
	root := t.TempDir()
	full, ok := filepath.Join(root, "full"), filepath.Join(root, "ok")
	fs, tgt := faultyTarget(t, full, ok)
	fs.Inject(spill.Fault{Op: spill.OpWrite, Err: errors.New("no space"), Short: true, Count: -1, Dir: full})
	ts := startStore(t, 1<<20, Config{SpillTarget: tgt, SpillBatchBytes: 128 << 10})
	c := ts.client()
	rng := rand.New(rand.NewPCG(6, 6))
	sums := map[ids.ObjectID]uint32{}
	for range 20 {
		id, sum := putObject(t, c, rng, 100<<10)
		sums[id] = sum
	}
	checkObjects(t, c, sums, rng)
	st := ts.stats()
	inFull, _ := spillFilesIn(t, full)
	inOK, _ := spillFilesIn(t, ok)
	if st.SpillErrorsTotal != 0 || inFull != 0 || inOK == 0 || fs.Fired(spill.OpWrite) == 0 {
		t.Fatalf("files: %d in the full directory, %d in the other; %d writes failed; stats %v", inFull, inOK, fs.Fired(spill.OpWrite), st)
	}
}

func TestRestoreErrorsAreTyped(t *testing.T) {
	dir := t.TempDir()
	fs, tgt := faultyTarget(t, dir)
	ts := startStore(t, 1<<20, Config{SpillTarget: tgt})
	c := ts.client()
	rng := rand.New(rand.NewPCG(7, 7))
	a, sumA := putObject(t, c, rng, 512<<10)
	b, sumB := putObject(t, c, rng, 512<<10)
	testutil.Eventually(t, "a to be spilled", func() bool { return ts.stats().SpilledObjectsTotal == 1 })

	for _, tc := range []struct {
		fault spill.Fault
		text  string
	}{
		{spill.ReadError(1), "input/output error"},
		{spill.CorruptRead(1), "checksum"},
	} {
		fs.Inject(tc.fault)
		_, err := c.GetWithPriority(bg, []ids.ObjectID{a}, 0, PriorityGet)
		var lost *errs.ObjectLostError
		if !errors.Is(err, ErrRestoreFailed) || !errors.As(err, &lost) || lost.ObjectID != a.String() || !strings.Contains(err.Error(), tc.text) {
			t.Fatalf("get with %v: %v", tc.fault, err)
		}
		// The object is still on disk, nothing is pinned or leaked.
		checkAccounting(t, ts, map[ids.ObjectID]uint64{a: 512 << 10, b: 512 << 10}, dir)
		if st := ts.stats(); st.PinnedBytes != 0 || st.SpilledBytesCurrent == 0 {
			t.Fatalf("after a failed restore: %v", st)
		}
	}
	if st := ts.stats(); st.RestoreErrorsTotal != 2 {
		t.Fatalf("restore errors not counted: %v", st)
	}
	// The disk works again: the same Get succeeds.
	checkObjects(t, c, map[ids.ObjectID]uint32{a: sumA, b: sumB}, rng)
	checkAccounting(t, ts, map[ids.ObjectID]uint64{a: 512 << 10, b: 512 << 10}, dir)
}

func TestSpillWritesFailAndRecoverUnderLoad(t *testing.T) {
	// Writes fail now and then while objects come and go: no object is
	// ever lost or damaged, and the accounting stays exact. Faults wait in
	// the FaultyFS until writes consume them, so new ones are scripted only
	// once the last have fired: else, on a loaded machine where the first
	// spill comes late, they queue up and fail eight writes in a row, and
	// the store's back-off (doubling to 6.4 s) outlasts a creation's wait.
	dir := t.TempDir()
	fs, tgt := faultyTarget(t, dir)
	ts := startStore(t, 4<<20, Config{SpillTarget: tgt, SpillBatchBytes: 512 << 10})
	c := ts.client()
	rng := rand.New(rand.NewPCG(8, 8))
	sums := map[ids.ObjectID]uint32{}
	alive := map[ids.ObjectID]uint64{}
	scripted := 0
	for i := range 120 {
		if fs.Fired(spill.OpWrite) == scripted {
			switch i % 20 {
			case 3:
				fs.Inject(spill.DiskFull(2))
				scripted += 2
			case 11:
				fs.Inject(spill.ShortWrite(1))
				scripted++
			}
		}
		size := rng.IntN(200 << 10)
		id, sum := putObject(t, c, rng, size)
		sums[id], alive[id] = sum, uint64(size)
		if i%7 == 0 {
			for id := range sums {
				c.Delete(id)
				delete(sums, id)
				delete(alive, id)
				break
			}
		}
	}
	fs.Clear()
	if st := ts.stats(); fs.Fired(spill.OpWrite) == 0 || st.SpillErrorsTotal == 0 {
		t.Fatalf("%d writes failed, %d scripted; stats %v", fs.Fired(spill.OpWrite), scripted, st)
	}
	checkObjects(t, c, sums, rng)
	checkAccounting(t, ts, alive, dir)
	for id := range sums {
		c.Delete(id)
	}
	checkAccounting(t, ts, nil, dir)
	if n, _ := spillFilesIn(t, dir); n != 0 {
		t.Fatalf("%d files left", n)
	}
}
