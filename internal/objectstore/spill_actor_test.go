package objectstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// Tests of spilling through the store actor, its spiller and real files.

// inspect runs fn on the store actor's goroutine.
func (ts *testStore) inspect(fn func(*Store)) {
	ts.t.Helper()
	if _, err := ts.request(&inspectForTest{fn: fn}).Result(); err != nil {
		ts.t.Fatal(err)
	}
}

// randomBytes returns size random bytes.
func randomBytes(rng *rand.Rand, size int) []byte {
	data := make([]byte, size+8)
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	return data[:size]
}

// putObject puts size random bytes and returns the id and checksum.
func putObject(t testing.TB, c *Client, rng *rand.Rand, size int) (ids.ObjectID, uint32) {
	t.Helper()
	data := randomBytes(rng, size)
	id := newObjectID()
	if err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, data); err != nil {
		t.Fatalf("put of %d bytes: %v", size, err)
	}
	return id, crc32.ChecksumIEEE(data)
}

// putObjects puts n random objects of size bytes, returning their
// checksums and sizes by id (for checkObjects and checkAccounting).
func putObjects(t testing.TB, c *Client, rng *rand.Rand, n, size int) (map[ids.ObjectID]uint32, map[ids.ObjectID]uint64) {
	t.Helper()
	sums, alive := map[ids.ObjectID]uint32{}, map[ids.ObjectID]uint64{}
	for range n {
		id, sum := putObject(t, c, rng, size)
		sums[id], alive[id] = sum, uint64(size)
	}
	return sums, alive
}

// checkObjects gets every object (a few at a time, at priority Get),
// compares its checksum and releases it.
func checkObjects(t testing.TB, c *Client, want map[ids.ObjectID]uint32, rng *rand.Rand) {
	t.Helper()
	list := make([]ids.ObjectID, 0, len(want))
	for id := range want {
		list = append(list, id)
	}
	rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	for len(list) > 0 {
		n := min(len(list), 1+rng.IntN(3))
		objs, err := c.GetWithPriority(bg, list[:n], 0, PriorityGet)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		for _, o := range objs {
			if crc32.ChecksumIEEE(o.Data) != want[o.ID] {
				t.Fatalf("object %s: bytes differ after spilling", o.ID)
			}
		}
		c.Release(list[:n]...)
		list = list[n:]
	}
}

// spillFilesIn returns the number and total size of the spill files in
// dirs, failing on any other file: those with a name, and those this
// process holds open with none (spill.Local unlinks its files).
func spillFilesIn(t testing.TB, dirs ...string) (n int, size uint64) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fds {
		fd := filepath.Join("/proc/self/fd", e.Name())
		target, err := os.Readlink(fd)
		if err != nil {
			continue // closed meanwhile
		}
		name, ok := strings.CutSuffix(target, " (deleted)")
		if !ok || !spill.IsSpillFile(name) || !slices.Contains(dirs, filepath.Dir(name)) {
			continue
		}
		fi, err := os.Stat(fd)
		if err != nil {
			continue
		}
		n++
		size += uint64(fi.Size())
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			if spill.IsLockFile(e.Name()) {
				continue
			}
			if !spill.IsSpillFile(e.Name()) {
				t.Fatalf("stray file %s in %s", e.Name(), d)
			}
			fi, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			n++
			size += uint64(fi.Size())
		}
	}
	return n, size
}

// checkAccounting verifies the store's exact state against the objects
// the test holds (id → length) and the files on disk: the Store's own
// invariants, no object more or less, every object in memory or on disk,
// and the stats of files and bytes on disk matching the directories.
func checkAccounting(t testing.TB, ts *testStore, alive map[ids.ObjectID]uint64, dirs ...string) {
	t.Helper()
	var checkErr, accountErr error
	ts.inspect(func(s *Store) {
		checkErr = s.check()
		if s.Len() != len(alive) {
			accountErr = errors.New("object count differs")
		}
		var used, disk uint64
		for id, o := range s.objects {
			if alive[id] != o.loc.Length {
				accountErr = errors.New("an object the test does not hold, or of another length")
			}
			if o.resident {
				used += o.block
			}
			if o.disk != nil {
				disk += o.loc.Length
			} else if !o.resident {
				accountErr = errors.New("an object neither in memory nor on disk")
			}
		}
		st := s.Stats()
		if used != st.UsedBytes || disk != st.SpilledBytesCurrent {
			accountErr = errors.New("used or on-disk bytes do not add up")
		}
	})
	if checkErr != nil || accountErr != nil {
		t.Fatalf("invariants: %v; accounting: %v", checkErr, accountErr)
	}
	st := ts.stats()
	// Files are removed by the spiller after the store forgets them; wait
	// for the directories to catch up with the stats.
	testutil.Eventually(t, "spill files on disk to match the stats", func() bool {
		n, size := spillFilesIn(t, dirs...)
		st = ts.stats()
		return uint64(n) == st.SpillFilesCurrent && size == st.SpillFileBytesCurrent
	})
}

func TestSpillRestoreRoundTripMixedSizes(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	const capacity = 8 << 20
	ts := startStore(t, capacity, Config{SpillDirs: dirs, SpillBatchBytes: 1 << 20, SpillMaxObjects: 50})
	writer, reader := ts.client(), ts.client()
	rng := rand.New(rand.NewPCG(11, 12))
	sums := map[ids.ObjectID]uint32{}
	alive := map[ids.ObjectID]uint64{}
	var total int
	for total < 8*capacity {
		var size int
		switch p := rng.IntN(10); {
		case p < 6:
			size = rng.IntN(16 << 10)
		case p < 9:
			size = 16<<10 + rng.IntN(240<<10)
		default:
			size = 256<<10 + rng.IntN(7<<20/4)
		}
		id, sum := putObject(t, writer, rng, size)
		sums[id], alive[id] = sum, uint64(size)
		total += size
	}
	st := ts.stats()
	if st.SpilledObjectsTotal == 0 || st.UsedBytes > capacity || st.NumObjects != uint64(len(sums)) {
		t.Fatalf("after %d bytes in %d objects: %v", total, len(sums), st)
	}
	for _, d := range dirs {
		if n, _ := spillFilesIn(t, d); n == 0 {
			t.Fatalf("no spill file in %s: directories are not used in turn", d)
		}
	}
	checkAccounting(t, ts, alive, dirs...)

	checkObjects(t, reader, sums, rng)
	st = ts.stats()
	if st.RestoredObjectsTotal == 0 || st.SpillErrorsTotal != 0 || st.RestoreErrorsTotal != 0 || st.PinnedBytes != 0 {
		t.Fatalf("after reading everything back: %v", st)
	}
	t.Logf("%d objects, %d bytes through a %d-byte store: %v", len(sums), total, capacity, st)
	checkAccounting(t, ts, alive, dirs...)

	// Free half, read the rest again, free everything: no file is left.
	for id := range sums {
		if rng.IntN(2) == 0 {
			writer.Delete(id)
			delete(sums, id)
			delete(alive, id)
		}
	}
	checkAccounting(t, ts, alive, dirs...)
	checkObjects(t, reader, sums, rng)
	for id := range sums {
		writer.Delete(id)
	}
	checkAccounting(t, ts, nil, dirs...)
	if st := ts.stats(); st.UsedBytes != 0 || st.SpilledBytesCurrent != 0 || st.SpillFilesCurrent != 0 || st.NumObjects != 0 {
		t.Fatalf("after freeing everything: %v", st)
	}
	if n, _ := spillFilesIn(t, dirs...); n != 0 {
		t.Fatalf("%d spill files left", n)
	}
}

func TestGetRestoresSpilledObject(t *testing.T) {
	dir := t.TempDir()
	ts := startStore(t, 1<<20, Config{SpillDirs: []string{dir}})
	c := ts.client()
	rng := rand.New(rand.NewPCG(1, 1))
	a, sumA := putObject(t, c, rng, 600<<10)
	b, sumB := putObject(t, c, rng, 600<<10) // does not fit next to a: a is spilled
	st := ts.stats()
	if st.SpilledObjectsTotal != 1 || st.SpilledBytesCurrent != 600<<10 || st.UsedBytes != BlockSize(600<<10) {
		t.Fatalf("after the second put: %v", st)
	}
	if st.FallbackCreatesTotal != 1 || st.FallbackBytesTotal != 600<<10 {
		t.Fatalf("the second put waited for a spill, fallback not counted: %v", st)
	}
	// Getting a brings it back, which spills b.
	checkObjects(t, c, map[ids.ObjectID]uint32{a: sumA}, rng)
	st = ts.stats()
	if st.RestoredObjectsTotal != 1 || st.RestoredBytesTotal != 600<<10 || st.SpilledObjectsTotal != 2 {
		t.Fatalf("after getting a: %v", st)
	}
	// a keeps its disk copy: bringing b back only drops a's memory.
	checkObjects(t, c, map[ids.ObjectID]uint32{b: sumB}, rng)
	if st := ts.stats(); st.SpilledObjectsTotal != 2 || st.SpillFilesCurrent != 2 || st.RestoredObjectsTotal != 2 {
		t.Fatalf("after getting b: %v", st)
	}
	// A Get with a timeout restores too.
	objs, err := c.Get(bg, []ids.ObjectID{a}, 5e9)
	if err != nil || crc32.ChecksumIEEE(objs[0].Data) != sumA {
		t.Fatalf("get with a timeout: %v", err)
	}
	c.Release(a)
	checkAccounting(t, ts, map[ids.ObjectID]uint64{a: 600 << 10, b: 600 << 10}, dir)
}

func TestPinnedObjectsAreNeverSpilled(t *testing.T) {
	dir := t.TempDir()
	ts := startStore(t, 2<<20, Config{SpillDirs: []string{dir}, SpillThreshold: 0.5, CreateTimeout: 300e6})
	writer, reader := ts.client(), ts.client()
	rng := rand.New(rand.NewPCG(2, 2))
	pinned := map[ids.ObjectID]uint32{}
	var views []Object
	for range 4 {
		id, sum := putObject(t, writer, rng, 256<<10)
		pinned[id] = sum
		objs, err := reader.Get(bg, []ids.ObjectID{id}, 0)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, objs...)
	}
	others := map[ids.ObjectID]uint32{}
	for range 12 {
		id, sum := putObject(t, writer, rng, 256<<10)
		others[id] = sum
	}
	ts.inspect(func(s *Store) {
		for id := range pinned {
			if o := s.objects[id]; !o.resident || o.disk != nil || o.io != ioNone {
				t.Errorf("pinned object %s was spilled", id)
			}
		}
	})
	for _, v := range views {
		if crc32.ChecksumIEEE(v.Data) != pinned[v.ID] {
			t.Fatal("a pinned view changed")
		}
	}
	// Only the pinned megabyte is left in memory once everything else is
	// spilled: a creation of 1.5 MiB can never fit, and fails at its
	// deadline.
	if _, err := writer.Create(bg, newObjectID(), 3<<19, atollpb.Codec_CODEC_BYTES); !errors.Is(err, errs.ErrObjectStoreFull) {
		t.Fatalf("creation beyond the unpinnable memory: %v", err)
	}
	if st := ts.stats(); st.PinnedBytes != 1<<20 || st.UsedBytes != 1<<20 {
		t.Fatalf("after the failed creation: %v", st)
	}
	checkObjects(t, writer, others, rng)
	for id := range pinned {
		reader.Release(id)
	}
	checkObjects(t, writer, pinned, rng)
}

func TestDisconnectFreesOwnedSpilledObjects(t *testing.T) {
	dir := t.TempDir()
	ts := startStore(t, 1<<20, Config{SpillDirs: []string{dir}})
	worker, driver := ts.client(), ts.client()
	rng := rand.New(rand.NewPCG(3, 3))
	for range 6 {
		data := randomBytes(rng, 300<<10)
		if err := worker.PutOwned(bg, newObjectID(), atollpb.Codec_CODEC_BYTES, data, worker.ID()); err != nil {
			t.Fatal(err)
		}
	}
	keep, sum := putObject(t, driver, rng, 100)
	if st := ts.stats(); st.SpilledObjectsCurrent < 3 || st.NumObjects != 7 {
		t.Fatalf("before the disconnect: %v", st)
	}
	worker.Disconnect()
	testutil.Eventually(t, "the owned objects' spill files to go", func() bool {
		n, _ := spillFilesIn(t, dir)
		return n == int(ts.stats().SpillFilesCurrent)
	})
	checkObjects(t, driver, map[ids.ObjectID]uint32{keep: sum}, rng)
	checkAccounting(t, ts, map[ids.ObjectID]uint64{keep: 100}, dir)
	driver.Delete(keep)
	checkAccounting(t, ts, nil, dir)
	if n, _ := spillFilesIn(t, dir); n != 0 {
		t.Fatalf("%d files left", n)
	}
}

func TestSpillingSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startStore(t, 2<<20, Config{SpillDirs: []string{dir}, SpillBatchBytes: 256 << 10})
	c := ts.client()
	rng := rand.New(rand.NewPCG(4, 4))
	sums := map[ids.ObjectID]uint32{}
	alive := map[ids.ObjectID]uint64{}
	for i := range 40 {
		id, sum := putObject(t, c, rng, 100<<10)
		sums[id], alive[id] = sum, 100<<10
		if i%10 == 5 {
			// Crash the store actor, possibly with spill I/O under way:
			// its spiller stops with it and what it had not answered is
			// done again by the new one.
			ts.system.Root.Send(ts.pid, &crashForTest{})
		}
	}
	checkObjects(t, c, sums, rng)
	checkAccounting(t, ts, alive, dir)
}

func TestSpillConfigValidation(t *testing.T) {
	arena := newTestArena(t, 1<<20, ArenaOptions{})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"threshold above 1":      {SpillDirs: []string{t.TempDir()}, SpillThreshold: 1.5},
		"negative threshold":     {SpillDirs: []string{t.TempDir()}, SpillThreshold: -0.1},
		"negative max objects":   {SpillDirs: []string{t.TempDir()}, SpillMaxObjects: -1},
		"empty directory":        {SpillDirs: []string{""}},
		"directory under a file": {SpillDirs: []string{filepath.Join(file, "spill")}},
	} {
		if _, err := NewProps(cfg, arena); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Spilling off: the spill knobs are ignored, as before.
	if _, err := NewProps(Config{SpillThreshold: 7}, arena); err != nil {
		t.Errorf("spill knobs without spilling: %v", err)
	}
	cfg, err := Config{SpillDirs: []string{"x"}}.withDefaults(1 << 20)
	if err != nil || cfg.SpillThreshold != DefaultSpillThreshold || cfg.SpillBatchBytes != DefaultSpillBatchBytes || cfg.SpillMaxObjects != DefaultSpillMaxObjects {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
}
