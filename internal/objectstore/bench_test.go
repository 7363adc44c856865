package objectstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// BenchmarkAllocator measures alloc/free pairs against a steady population
// of live blocks of mixed sizes (fragmented free space).
func BenchmarkAllocator(b *testing.B) {
	for _, live := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			al := NewAllocator(1 << 40)
			offs := make([]uint64, live)
			sizes := make([]uint64, 1024)
			for i := range sizes {
				sizes[i] = uint64(rng.IntN(1 << 20))
			}
			for i := range offs {
				offs[i], _ = al.Alloc(sizes[i%len(sizes)])
			}
			i := 0
			for b.Loop() {
				k := i % live
				if err := al.Free(offs[k]); err != nil {
					b.Fatal(err)
				}
				off, ok := al.Alloc(sizes[i%len(sizes)])
				if !ok {
					b.Fatal("alloc failed")
				}
				offs[k] = off
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "allocs/s")
		})
	}
}

// BenchmarkStoreStateMachine measures the pure Store: create, seal, get,
// release and delete of one object.
func BenchmarkStoreStateMachine(b *testing.B) {
	s := NewStore(1 << 30)
	client := ids.NewWorkerID()
	now := time.Unix(0, 0)
	task := ids.NewTaskID()
	var i uint32
	for b.Loop() {
		id := ids.PutObjectID(task, i)
		i++
		if _, _, err := s.Create(CreateRequest{ID: id, Size: 1024, Client: client}, now); err != nil {
			b.Fatal(err)
		}
		if err := s.Seal(id, client, now); err != nil {
			b.Fatal(err)
		}
		list := []ids.ObjectID{id}
		s.Get(list, client, now)
		if err := s.Release(list, client, now); err != nil {
			b.Fatal(err)
		}
		s.Delete(list, now)
		s.TakeEffects()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkClientObjectLifecycle measures create+seal+get+release+delete of
// one object through the Client and the store actor (four round trips and
// two one-way sends per object).
func BenchmarkClientObjectLifecycle(b *testing.B) {
	for _, size := range []uint64{64, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			ts := startStore(b, 1<<30, Config{})
			c := ts.client()
			task := ids.NewTaskID()
			var i uint32
			b.SetBytes(int64(size))
			for b.Loop() {
				id := ids.PutObjectID(task, i)
				i++
				buf, err := c.Create(bg, id, size, atollpb.Codec_CODEC_BYTES)
				if err != nil {
					b.Fatal(err)
				}
				buf[0] = 1
				if err := c.Seal(bg, id); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Get(bg, []ids.ObjectID{id}, 0); err != nil {
					b.Fatal(err)
				}
				c.Release(id)
				c.Delete(id)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

const bigObject = 64 << 20

func reportGBs(b *testing.B) {
	b.ReportMetric(float64(b.N)*bigObject/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkWrite64MiB compares writing a 64 MiB object into the arena
// (create, copy, seal, delete through the Client) with a plain memcpy
// between Go buffers of the same size, and shows what returning freed
// memory to the kernel (Config.ReleaseFreedMemory) costs on the next write.
func BenchmarkWrite64MiB(b *testing.B) {
	src := make([]byte, bigObject)
	for i := range src {
		src[i] = byte(i)
	}
	b.Run("memcpy-baseline", func(b *testing.B) {
		dst := make([]byte, bigObject)
		copy(dst, src) // fault the destination in, as the arena's pages are after the first object
		b.SetBytes(bigObject)
		for b.Loop() {
			copy(dst, src)
		}
		reportGBs(b)
	})
	for _, release := range []bool{false, true} {
		b.Run(fmt.Sprintf("arena-create-write/release-freed=%v", release), func(b *testing.B) {
			ts := startStore(b, 2*bigObject, Config{ReleaseFreedMemory: release})
			c := ts.client()
			task := ids.NewTaskID()
			var i uint32
			b.SetBytes(bigObject)
			for b.Loop() {
				id := ids.PutObjectID(task, i)
				i++
				buf, err := c.Create(bg, id, bigObject, atollpb.Codec_CODEC_BYTES)
				if err != nil {
					b.Fatal(err)
				}
				copy(buf, src)
				if err := c.Seal(bg, id); err != nil {
					b.Fatal(err)
				}
				c.Delete(id)
			}
			reportGBs(b)
		})
	}
}
