package objectstore

import (
	"math/rand/v2"
	"testing"
)

func TestBlockSize(t *testing.T) {
	for _, tc := range []struct{ size, want uint64 }{
		{0, 64}, {1, 64}, {63, 64}, {64, 64}, {65, 128}, {1000, 1024},
		{^uint64(0), 0}, {^uint64(0) - 62, 0}, {^uint64(0) - 63, ^uint64(0) - 63}, {^uint64(0) - 64, ^uint64(0) - 63},
	} {
		if got := BlockSize(tc.size); got != tc.want {
			t.Errorf("BlockSize(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func TestAllocatorTable(t *testing.T) {
	type op struct {
		alloc   uint64 // size to allocate, if free < 0
		free    int    // index (into earlier allocations) to free, or -1
		wantOff uint64
		wantOK  bool
	}
	a := func(size, off uint64) op { return op{alloc: size, free: -1, wantOff: off, wantOK: true} }
	fail := func(size uint64) op { return op{alloc: size, free: -1} }
	free := func(i int) op { return op{free: i} }
	for _, tc := range []struct {
		name     string
		capacity uint64
		ops      []op
		used     uint64
		largest  uint64
		blocks   int
	}{
		{"empty", 1024, nil, 0, 1024, 1},
		{"capacity rounds down", 1000, []op{a(960, 0), fail(1)}, 960, 0, 0},
		{"zero size takes a block", 1024, []op{a(0, 0), a(0, 64)}, 128, 896, 1},
		{"sizes round up", 1024, []op{a(1, 0), a(65, 64), a(128, 192)}, 320, 704, 1},
		{"exact fill", 256, []op{a(128, 0), a(128, 128), fail(1)}, 256, 0, 0},
		{"too large", 256, []op{fail(257), fail(^uint64(0))}, 0, 256, 1},
		{"reuse freed", 256, []op{a(128, 0), a(128, 128), free(0), a(64, 0)}, 192, 64, 1},
		{"best fit picks smallest hole", 1024, []op{
			a(256, 0), a(64, 256), a(128, 320), a(64, 448), a(64, 512),
			free(0), free(2), // holes: [0,256) and [320,448)
			a(100, 320), // the 128-byte hole fits best
		}, 320, 448, 2},
		{"best fit lowest offset among equals", 1024, []op{
			a(64, 0), a(64, 64), a(64, 128), a(64, 192), a(64, 256),
			free(1), free(3), a(64, 64),
		}, 256, 704, 2},
		{"free on both sides coalesces", 512, []op{
			a(128, 0), a(128, 128), a(128, 256), free(0), free(2), free(1),
		}, 0, 512, 1},
		{"coalesce with trailing free space", 512, []op{a(128, 0), a(128, 128), free(1)}, 128, 384, 1},
		{"fragmented: enough bytes but no block", 512, []op{
			a(128, 0), a(128, 128), a(128, 256), a(128, 384), free(0), free(2), fail(256),
		}, 256, 128, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			al := NewAllocator(tc.capacity)
			var offs []uint64
			for i, o := range tc.ops {
				if o.free >= 0 {
					if err := al.Free(offs[o.free]); err != nil {
						t.Fatalf("op %d: free: %v", i, err)
					}
					continue
				}
				off, ok := al.Alloc(o.alloc)
				if ok != o.wantOK || (ok && off != o.wantOff) {
					t.Fatalf("op %d: Alloc(%d) = %d, %v; want %d, %v", i, o.alloc, off, ok, o.wantOff, o.wantOK)
				}
				offs = append(offs, off)
				if err := al.check(); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			if al.Used() != tc.used || al.LargestFree() != tc.largest || al.FreeBlocks() != tc.blocks {
				t.Errorf("used %d largest %d blocks %d; want %d %d %d",
					al.Used(), al.LargestFree(), al.FreeBlocks(), tc.used, tc.largest, tc.blocks)
			}
		})
	}
}

func TestAllocatorBadFree(t *testing.T) {
	al := NewAllocator(1024)
	off, _ := al.Alloc(10)
	if err := al.Free(off); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []uint64{off, 64, 4096} {
		err, panicked := catch(func() error { return al.Free(bad) })
		if invariantsEnabled != panicked || (!panicked && err == nil) {
			t.Errorf("Free(%d): err %v, panicked %v (invariants %v)", bad, err, panicked, invariantsEnabled)
		}
	}
	if err := al.check(); err != nil {
		t.Fatal(err)
	}
}

// catch runs f and reports its error or whether it panicked.
func catch(f func() error) (err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

// TestAllocatorRandom runs seeded random alloc/free sequences and checks
// the invariants (tiling without overlap, used + free == capacity,
// alignment, coalescing) after every step.
func TestAllocatorRandom(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		capacity := uint64(64 << 10)
		al := NewAllocator(capacity)
		live := map[uint64]uint64{} // offset → requested size
		var order []uint64
		for step := 0; step < 3000; step++ {
			if len(order) > 0 && rng.IntN(100) < 45 {
				i := rng.IntN(len(order))
				off := order[i]
				order[i] = order[len(order)-1]
				order = order[:len(order)-1]
				delete(live, off)
				if err := al.Free(off); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			} else {
				size := uint64(rng.IntN(4096))
				if rng.IntN(10) == 0 {
					size = uint64(rng.IntN(16 << 10))
				}
				off, ok := al.Alloc(size)
				if ok {
					if _, dup := live[off]; dup {
						t.Fatalf("seed %d step %d: offset %d handed out twice", seed, step, off)
					}
					live[off] = size
					order = append(order, off)
				} else if BlockSize(size) <= al.LargestFree() {
					t.Fatalf("seed %d step %d: Alloc(%d) failed with a free block of %d", seed, step, size, al.LargestFree())
				}
			}
			if err := al.check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			var sum uint64
			for _, size := range live {
				sum += BlockSize(size)
			}
			if sum != al.Used() {
				t.Fatalf("seed %d step %d: used %d, live blocks %d", seed, step, al.Used(), sum)
			}
		}
		for _, off := range order {
			if err := al.Free(off); err != nil {
				t.Fatal(err)
			}
		}
		if al.Used() != 0 || al.FreeBlocks() != 1 || al.LargestFree() != capacity {
			t.Fatalf("seed %d: after freeing all: used %d, %d free blocks, largest %d", seed, al.Used(), al.FreeBlocks(), al.LargestFree())
		}
	}
}
