package objectstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// Spill benchmarks, in GB/s, each next to its baseline: the same bytes
// written to (or read from) a plain file in the same directory with one
// os.File call. Files go to the benchmark's temporary directory, on this
// machine's disk; neither side syncs, so both measure the page cache as
// the kernel absorbs them.

func reportGBsOf(b *testing.B, bytes int) {
	b.ReportMetric(float64(b.N)*float64(bytes)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// arenaObjects fills an arena with n objects of size random bytes, back to
// back, and returns their views.
func arenaObjects(b *testing.B, n, size int) (*Arena, []spill.Object) {
	arena := newTestArena(b, uint64(n*size), ArenaOptions{Prefault: true})
	rng := rand.New(rand.NewPCG(9, 9))
	copy(arena.Bytes(0, uint64(n*size)), randomBytes(rng, n*size))
	objs := make([]spill.Object, n)
	for i := range objs {
		objs[i] = spill.Object{ID: ids.PutObjectID(ids.NewTaskID(), uint32(i)), Data: arena.Bytes(uint64(i*size), uint64(size))}
	}
	return arena, objs
}

var spillShapes = []struct {
	name    string
	n, size int
}{
	{"1x64MiB", 1, 64 << 20},
	{"64x1MiB", 64, 1 << 20},
	{"4096x16KiB", 4096, 16 << 10},
}

// BenchmarkSpillWrite compares spill.WriteBatch (one fused file with its
// index, checksums taken) with one write of the same bytes to a file.
func BenchmarkSpillWrite(b *testing.B) {
	for _, shape := range spillShapes {
		total := shape.n * shape.size
		arena, objs := arenaObjects(b, shape.n, shape.size)
		dir := b.TempDir()
		b.Run(shape.name+"/baseline-file-write", func(b *testing.B) {
			b.SetBytes(int64(total))
			path := filepath.Join(dir, "baseline")
			for b.Loop() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(arena.Bytes(0, uint64(total))); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(path); err != nil {
					b.Fatal(err)
				}
			}
			reportGBsOf(b, total)
		})
		b.Run(shape.name+"/spill-write", func(b *testing.B) {
			tgt, err := spill.NewLocal([]string{dir}, spill.LocalOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(total))
			for b.Loop() {
				w, err := spill.WriteBatch(tgt, objs)
				if err != nil {
					b.Fatal(err)
				}
				if err := tgt.Remove(w.File); err != nil {
					b.Fatal(err)
				}
			}
			reportGBsOf(b, total)
		})
	}
}

// BenchmarkSpillRestore compares reading every object of a spill file one
// by one (spill.ReadExtent from the open file, as the spiller does: straight
// into the arena, checksum verified) with one read of the same bytes from a
// file into the arena.
func BenchmarkSpillRestore(b *testing.B) {
	for _, shape := range spillShapes {
		total := shape.n * shape.size
		arena, objs := arenaObjects(b, shape.n, shape.size)
		dir := b.TempDir()
		tgt, err := spill.NewLocal([]string{dir}, spill.LocalOptions{})
		if err != nil {
			b.Fatal(err)
		}
		w, err := spill.WriteBatch(tgt, objs)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(shape.name+"/baseline-file-read", func(b *testing.B) {
			f, err := os.Open(w.File)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(int64(total))
			for b.Loop() {
				if _, err := f.ReadAt(arena.Bytes(0, uint64(total)), 0); err != nil {
					b.Fatal(err)
				}
			}
			reportGBsOf(b, total)
		})
		b.Run(shape.name+"/restore-read", func(b *testing.B) {
			r, err := tgt.Open(w.File)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.SetBytes(int64(total))
			for b.Loop() {
				for i, e := range w.Extents {
					if err := spill.ReadExtent(r, e, objs[i].Data); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportGBsOf(b, total)
		})
	}
}

// BenchmarkStoreSpilling measures spilling and restoring through the store
// actor, its spiller and a real directory, with 8 MiB objects in a
// 256 MiB store: put-spilling puts objects that only fit by spilling older
// ones (each put writes one object's worth to disk); get-restoring gets
// spilled objects in turn (each get reads one back and evicts another).
// The baselines write 8 MiB to a new plain file, and read 8 MiB from one.
func BenchmarkStoreSpilling(b *testing.B) {
	const size, capacity = 8 << 20, 256 << 20
	src := randomBytes(rand.New(rand.NewPCG(10, 10)), size)
	dir := b.TempDir()
	b.Run("baseline-file-write", func(b *testing.B) {
		// A new file per iteration, kept, as spill files are: sustained
		// writes reach the disk's own speed once the kernel's dirty page
		// limits are hit.
		files := filepath.Join(dir, "files")
		if err := os.MkdirAll(files, 0o700); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(files)
		flushDirtyPages()
		b.SetBytes(size)
		i := 0
		for b.Loop() {
			i++
			if err := os.WriteFile(filepath.Join(files, fmt.Sprint(i)), src, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		reportGBsOf(b, size)
	})
	b.Run("baseline-file-read", func(b *testing.B) {
		arena := newTestArena(b, size, ArenaOptions{Prefault: true})
		path := filepath.Join(dir, "baseline")
		if err := os.WriteFile(path, src, 0o600); err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(size)
		for b.Loop() {
			if _, err := f.ReadAt(arena.Bytes(0, size), 0); err != nil {
				b.Fatal(err)
			}
		}
		reportGBsOf(b, size)
	})
	b.Run("put-spilling", func(b *testing.B) {
		ts := startPrefaultedStore(b, capacity, Config{SpillDirs: []string{filepath.Join(dir, "put")}})
		c := ts.client()
		for range capacity / size {
			put(b, c, src) // fill the store: the loop spills from the start
		}
		flushDirtyPages()
		b.SetBytes(size)
		for b.Loop() {
			put(b, c, src)
		}
		reportGBsOf(b, size)
		b.ReportMetric(float64(ts.stats().SpilledBytesTotal)/float64(b.N)/size, "spilled/put")
	})
	b.Run("get-restoring", func(b *testing.B) {
		ts := startPrefaultedStore(b, capacity, Config{SpillDirs: []string{filepath.Join(dir, "get")}})
		c := ts.client()
		var list []ids.ObjectID
		for range 2 * capacity / size {
			list = append(list, put(b, c, src))
		}
		b.SetBytes(size)
		i := 0
		for b.Loop() {
			// In creation order: the oldest object is always on disk.
			id := list[i%len(list)]
			i++
			if _, err := c.GetWithPriority(bg, []ids.ObjectID{id}, 0, PriorityGet); err != nil {
				b.Fatal(err)
			}
			c.Release(id)
		}
		reportGBsOf(b, size)
		b.ReportMetric(float64(ts.stats().RestoredBytesTotal)/float64(b.N)/size, "restored/get")
	})
}

// flushDirtyPages writes back what earlier benchmarks left in the page
// cache, so that a sustained-write benchmark does not pay for them.
func flushDirtyPages() { unix.Sync() }

func startPrefaultedStore(b *testing.B, capacity uint64, cfg Config) *testStore {
	ts := startStore(b, capacity, cfg)
	// Back the whole arena once, so first-touch page faults do not count.
	if err := ts.arena.Reserve(0, capacity); err != nil {
		b.Fatal(err)
	}
	return ts
}

func put(b *testing.B, c *Client, data []byte) ids.ObjectID {
	id := newObjectID()
	if err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, data); err != nil {
		b.Fatal(fmt.Errorf("put: %w", err))
	}
	return id
}
