package objectstore

import (
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestSpillingUnderConcurrentClients has several clients put, read back
// and free objects at once through a store far smaller than what they
// hold: every read sees its bytes, and at the end the accounting is exact
// and no spill file is left.
func TestSpillingUnderConcurrentClients(t *testing.T) {
	dir := t.TempDir()
	ts := startStore(t, 4<<20, Config{SpillDirs: []string{dir}, SpillBatchBytes: 512 << 10, SpillMaxObjects: 16})
	const workers, rounds = 4, 60
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ts.client()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			mine := map[ids.ObjectID]uint32{}
			var order []ids.ObjectID
			for r := range rounds {
				size := rng.IntN(256 << 10)
				data := randomBytes(rng, size)
				id := newObjectID()
				if err := c.Put(bg, id, atollpb.Codec_CODEC_BYTES, data); err != nil {
					errc <- err
					return
				}
				mine[id] = crc32.ChecksumIEEE(data)
				order = append(order, id)
				// Read back an older object (likely spilled by now).
				old := order[rng.IntN(len(order))]
				objs, err := c.GetWithPriority(bg, []ids.ObjectID{old}, 0, int32(r%3))
				if err != nil {
					errc <- err
					return
				}
				if crc32.ChecksumIEEE(objs[0].Data) != mine[old] {
					t.Errorf("worker %d: object %s differs", w, old)
				}
				c.Release(old)
				if r%3 == 2 { // free one
					k := rng.IntN(len(order))
					c.Delete(order[k])
					delete(mine, order[k])
					order = append(order[:k], order[k+1:]...)
				}
			}
			for _, id := range order {
				c.Delete(id)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	st := ts.stats()
	if st.SpilledObjectsTotal == 0 || st.RestoredObjectsTotal == 0 {
		t.Fatalf("the test did not spill and restore: %v", st)
	}
	checkAccounting(t, ts, nil, dir)
	if n, _ := spillFilesIn(t, dir); n != 0 || st.UsedBytes != 0 {
		t.Fatalf("%d files left, stats %v", n, ts.stats())
	}
}
