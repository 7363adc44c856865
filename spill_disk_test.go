package atoll_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestPutsFillASmallSpillDisk: a driver with a 64 MiB store spilling to a
// 32 MiB file system. Puts succeed until the disk is really full, the put
// that finds no room fails ObjectStoreFull saying the disk ran out, every
// object held stays readable, and after objects are released as many new
// puts fit.
func TestPutsFillASmallSpillDisk(t *testing.T) {
	const size = 2 << 20
	dir := testutil.SmallDisk(t, 32<<20)
	ctx := start(t, atoll.WithObjectStoreMemory(64<<20), atoll.WithSpillDirs(dir))
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x5a, 0xa5}, size/4) }
	// A put waits for space as long as its context allows.
	put := func(i int) (atoll.ObjectRef[[]byte], error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return atoll.Put(ctx, value(i))
	}
	var refs []atoll.ObjectRef[[]byte]
	for {
		ref, err := put(len(refs))
		if err != nil {
			var full *atoll.ObjectStoreFullError
			if !errors.As(err, &full) || full.Resource != atoll.StoreDisk {
				t.Fatalf("put %d: %v, want ObjectStoreFull (disk)", len(refs), err)
			}
			break
		}
		refs = append(refs, ref)
		if len(refs) > (64+32)<<20/size {
			t.Fatalf("%d puts of %d bytes fit in 64 MiB of memory and 32 MiB of disk", len(refs), size)
		}
	}
	mem, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d objects held, %d MiB spilled", len(refs), mem.SpilledBytesCurrent>>20)
	if mem.SpilledBytesCurrent < 26<<20 {
		t.Fatalf("puts failed with %d MiB spilled to a 32 MiB disk", mem.SpilledBytesCurrent>>20)
	}
	for i, ref := range refs {
		got, err := atoll.Get(ctx, ref)
		if err != nil {
			t.Fatalf("get of object %d of %d: %v", i, len(refs), err)
		}
		if !bytes.Equal(got, value(i)) {
			t.Fatalf("object %d differs after spilling", i)
		}
	}
	const freed = 8
	for _, ref := range refs[:freed] {
		ref.Release()
	}
	for i := range freed {
		if _, err := put(i); err != nil {
			t.Fatalf("new put %d of %d after releasing %d objects: %v", i+1, freed, freed, err)
		}
	}
}
