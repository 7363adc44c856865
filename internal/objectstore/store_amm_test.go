package objectstore

import (
	"slices"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestDropCopies: the store drops only sealed, unpinned copies pulled from
// elsewhere that nobody read within the grace period; the inventory says
// which objects are copies, pinned, being read or not sealed.
func TestDropCopies(t *testing.T) {
	s := NewStore(1 << 20)
	t0 := time.Unix(100, 0)
	c := clientID("c")
	primary, pulled, pinned, fresh, unsealed := objID("primary"), objID("pulled"), objID("pinned"), objID("fresh"), objID("unsealed")
	for _, o := range []struct {
		id   ids.ObjectID
		copy bool
		seal bool
		at   time.Time
	}{{primary, false, true, t0}, {pulled, true, true, t0}, {pinned, true, true, t0}, {fresh, true, true, t0.Add(time.Second)}, {unsealed, true, false, t0}} {
		if _, queued, err := s.Create(CreateRequest{ID: o.id, Size: 4096, Client: c, Copy: o.copy}, o.at); err != nil || queued {
			t.Fatalf("create: %v queued=%v", err, queued)
		}
		if o.seal {
			if err := s.Seal(o.id, c, o.at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if res := s.Get([]ids.ObjectID{pinned}, c, t0); len(res.Missing) != 0 {
		t.Fatal("get")
	}
	now := t0.Add(1500 * time.Millisecond)
	inv := s.Inventory(now, time.Second, 0)
	flags := map[string]string{}
	for _, h := range inv.Objects {
		var f string
		for _, b := range []struct {
			on   bool
			name string
		}{{h.Copy, "copy"}, {h.Pinned, "pinned"}, {h.Reading, "reading"}, {!h.Sealed, "unsealed"}} {
			if b.on {
				f += b.name + " "
			}
		}
		flags[objName(ids.MustObjectID(h.ObjectId))] = f
	}
	want := map[string]string{"primary": "", "pulled": "copy ", "pinned": "copy pinned ", "fresh": "copy reading ", "unsealed": "copy unsealed "}
	for k, v := range want {
		if flags[k] != v {
			t.Errorf("inventory flags of %s: %q, want %q", k, flags[k], v)
		}
	}
	all := []ids.ObjectID{primary, pulled, pinned, fresh, unsealed, objID("unknown")}
	dropped, refused := s.DropCopies(all, now, time.Second)
	if !slices.Equal(dropped, []ids.ObjectID{pulled}) || len(refused) != 5 {
		t.Fatalf("dropped %v, refused %d; want only the idle pulled copy", dropped, len(refused))
	}
	if res := s.Get([]ids.ObjectID{pulled}, c, now); len(res.Missing) != 1 {
		t.Fatal("a dropped copy is still readable")
	}
	// Past the grace period, once unpinned, the others go too (not the primary).
	if err := s.Release([]ids.ObjectID{pinned}, c, now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Second)
	if dropped, _ = s.DropCopies(all, later, time.Second); len(dropped) != 2 {
		t.Fatalf("dropped %v later, want pinned and fresh", dropped)
	}
	if s.Len() != 2 {
		t.Fatalf("%d objects left, want the primary and the unsealed copy", s.Len())
	}
}
