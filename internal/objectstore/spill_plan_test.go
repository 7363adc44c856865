package objectstore

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Tests of a fault plan's spill rules on a real store spilling to real
// files.

func planPoints(t *testing.T, plan string) (*faultplan.Points, *actors.FaultInjector) {
	t.Helper()
	p, err := faultplan.Parse([]byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	fi := actors.NewFaultInjector()
	return p.Points(faultplan.Driver, fi), fi
}

// countKind counts the fault log's events of a kind at a point.
func countKind(fi *actors.FaultInjector, kind actors.FaultKind, point faultplan.Point) int {
	n := 0
	for _, e := range fi.Log() {
		if e.Kind == kind && e.Point == string(point) {
			n++
		}
	}
	return n
}

// spill-full for the next writes: they fail, nothing is lost, the
// creation that needed the room waits, and spilling resumes after them.
func TestPlanSpillFullForNextWrites(t *testing.T) {
	dir := t.TempDir()
	pts, fi := planPoints(t, "rules: [{name: full, action: spill-full, count: 2}]")
	ts := startStore(t, 2<<20, Config{SpillDirs: []string{dir}, SpillFaults: pts, SpillThreshold: 0.5,
		SpillBatchBytes: 256 << 10, CreateTimeout: 20 * time.Second})
	c := ts.client()
	rng := rand.New(rand.NewPCG(11, 11))
	sums, alive := putObjects(t, c, rng, 6, 256<<10)
	testutil.Eventually(t, "the planned failed spills", func() bool { return ts.stats().SpillErrorsTotal == 2 })
	// This creation needs room only spilling makes: it waits through
	// the failures and back-offs and succeeds once spilling resumes.
	id, sum := putObject(t, c, rng, 768<<10)
	sums[id], alive[id] = sum, 768<<10
	checkObjects(t, c, sums, rng)
	st := ts.stats()
	if st.SpillErrorsTotal != 2 || st.SpilledObjectsTotal == 0 {
		t.Fatalf("stats after the disk recovered: %v", st)
	}
	if n := countKind(fi, actors.FaultSpillFull, faultplan.SpillWrite); n != 2 {
		t.Fatalf("%d spill-full faults logged, want 2: %v", n, fi.Log())
	}
	checkAccounting(t, ts, alive, dir)
}

// spill-full for good: every object stays in memory, intact, no file is
// written, and a creation that needs room fails with the typed
// ObjectStoreFull at its deadline.
func TestPlanSpillFullKeepsObjectsInMemory(t *testing.T) {
	dir := t.TempDir()
	pts, fi := planPoints(t, "rules: [{action: spill-full}]")
	ts := startStore(t, 2<<20, Config{SpillDirs: []string{dir}, SpillFaults: pts, SpillThreshold: 0.5,
		SpillBatchBytes: 256 << 10, CreateTimeout: 300 * time.Millisecond})
	c := ts.client()
	rng := rand.New(rand.NewPCG(12, 12))
	sums, alive := putObjects(t, c, rng, 6, 256<<10)
	testutil.Eventually(t, "a failed spill", func() bool { return ts.stats().SpillErrorsTotal > 0 })
	if _, err := c.Create(bg, newObjectID(), 768<<10, atollpb.Codec_CODEC_BYTES); !errors.Is(err, errs.ErrObjectStoreFull) {
		t.Fatalf("creation with the disk full: %v", err)
	}
	checkObjects(t, c, sums, rng)
	if st := ts.stats(); st.SpilledObjectsTotal != 0 || st.UsedBytes != 6*(256<<10) {
		t.Fatalf("with the disk full: %v", st)
	}
	if n, _ := spillFilesIn(t, dir); n != 0 {
		t.Fatalf("failed writes left %d files", n)
	}
	if countKind(fi, actors.FaultSpillFull, faultplan.SpillWrite) == 0 {
		t.Fatalf("no spill-full fault logged: %v", fi.Log())
	}
	checkAccounting(t, ts, alive, dir)
}

// spill-slow: writes and restores are delayed, and still complete.
func TestPlanSpillSlow(t *testing.T) {
	dir := t.TempDir()
	const delay = 30 * time.Millisecond
	pts, fi := planPoints(t, "rules: [{action: spill-slow, delay: 30ms}]")
	ts := startStore(t, 1<<20, Config{SpillDirs: []string{dir}, SpillFaults: pts})
	c := ts.client()
	rng := rand.New(rand.NewPCG(13, 13))
	a, sumA := putObject(t, c, rng, 512<<10)
	b, sumB := putObject(t, c, rng, 512<<10)
	testutil.Eventually(t, "a to be spilled", func() bool { return ts.stats().SpilledObjectsTotal == 1 })
	start := time.Now()
	checkObjects(t, c, map[ids.ObjectID]uint32{a: sumA, b: sumB}, rng)
	if took := time.Since(start); took < delay {
		t.Fatalf("a restore under a slow disk took %v, less than its delay", took)
	}
	if countKind(fi, actors.FaultSpillSlow, faultplan.SpillWrite) == 0 || countKind(fi, actors.FaultSpillSlow, faultplan.SpillRead) == 0 {
		t.Fatalf("fault log %v: want slow writes and reads", fi.Log())
	}
	checkAccounting(t, ts, map[ids.ObjectID]uint64{a: 512 << 10, b: 512 << 10}, dir)
}
