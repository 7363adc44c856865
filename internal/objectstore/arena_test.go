package objectstore

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openSecondMapping maps the arena's memfd a second time through a dup of
// its descriptor, as another process of the node would.
func openSecondMapping(t *testing.T, a *Arena) *Arena {
	t.Helper()
	fd, err := unix.Dup(int(a.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenArena(os.NewFile(uintptr(fd), "dup"), a.Size())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newTestArena(t testing.TB, size uint64, opts ArenaOptions) *Arena {
	t.Helper()
	a, err := NewArena("objectstore-test", size, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func TestArenaSharedMapping(t *testing.T) {
	a := newTestArena(t, 1<<20, ArenaOptions{})
	b := openSecondMapping(t, a)
	if err := a.Reserve(4096, 100); err != nil {
		t.Fatal(err)
	}
	w := a.Bytes(4096, 100)
	if len(w) != 100 || cap(w) != 100 {
		t.Fatalf("view len %d cap %d, want 100/100", len(w), cap(w))
	}
	copy(w, "hello through shared memory")
	if got := b.Bytes(4096, 27); string(got) != "hello through shared memory" {
		t.Fatalf("second mapping reads %q", got)
	}
	// And back: a write through the second mapping shows in the first.
	b.Bytes(8192, 1)[0] = 42
	if a.Bytes(8192, 1)[0] != 42 {
		t.Fatal("write through second mapping not visible")
	}
}

func TestArenaReleasePunchesHole(t *testing.T) {
	const mib = 1 << 20
	a := newTestArena(t, 4*mib, ArenaOptions{Prefault: true})
	view := a.Bytes(mib, 2*mib)
	for i := range view {
		view[i] = 0xAB
	}
	if err := a.Release(mib, 2*mib); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(view, make([]byte, 2*mib)) {
		t.Fatal("released range does not read as zeros")
	}
	if err := a.Reserve(mib, 2*mib); err != nil {
		t.Fatal(err)
	}
	view[0] = 1 // writable again
}

// resident reports how many of view's pages are in memory (mincore).
func resident(t *testing.T, view []byte) int {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(view)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&view[0])), uintptr(len(view)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// A private arena is this process's anonymous memory: no file to hand
// on, Reserve backs the range, Release gives its whole pages back and
// they read as zeros, and what lies outside a release is kept.
func TestPrivateArena(t *testing.T) {
	const mib = 1 << 20
	a := newTestArena(t, 8*mib, ArenaOptions{Private: true, HugePages: HugePagesOff})
	if !a.Private() || a.File() != nil {
		t.Fatalf("Private() = %v, File() = %v; want true, nil", a.Private(), a.File())
	}
	view := a.Bytes(0, 4*mib)
	if got := resident(t, view); got != 0 {
		t.Fatalf("%d pages resident before anything was reserved", got)
	}
	if err := a.Reserve(mib, 2*mib); err != nil {
		t.Fatal(err)
	}
	if got, want := resident(t, a.Bytes(mib, 2*mib)), 2*mib/os.Getpagesize(); got != want {
		t.Fatalf("%d of %d reserved pages resident", got, want)
	}
	for i := range view {
		view[i] = 0xAB
	}
	page := uint64(os.Getpagesize())
	if err := a.Release(mib+page/2, 2*mib); err != nil { // partial pages at both ends
		t.Fatal(err)
	}
	released := a.Bytes(mib+page, 2*mib-page)
	if resident(t, released) != 0 { // before reading maps the zero page
		t.Fatal("released pages still resident")
	}
	if !bytes.Equal(released, make([]byte, len(released))) {
		t.Fatal("released pages do not read as zeros")
	}
	if view[mib+page/2-1] != 0xAB || view[mib+page-1] != 0xAB || view[3*mib+page/2] != 0xAB {
		t.Fatal("release dropped bytes outside its range")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestArenaRemembersBackedChunks(t *testing.T) {
	const mib = 1 << 20
	a := newTestArena(t, 3*mib+100, ArenaOptions{})
	if a.allBacked(0, 3) {
		t.Fatal("fresh arena reported backed")
	}
	if err := a.Reserve(mib-10, 20); err != nil { // straddles chunks 0 and 1
		t.Fatal(err)
	}
	if !a.allBacked(0, 1) || a.allBacked(2, 2) {
		t.Fatal("reserve did not back exactly the chunks it touched")
	}
	if err := a.Reserve(3*mib, 100); err != nil { // the short last chunk
		t.Fatal(err)
	}
	if err := a.Release(mib+64, 64); err != nil {
		t.Fatal(err)
	}
	if !a.allBacked(0, 0) || a.allBacked(1, 1) || !a.allBacked(3, 3) {
		t.Fatal("release did not forget exactly the chunk it touched")
	}
	p := newTestArena(t, 2*mib, ArenaOptions{Prefault: true})
	if !p.allBacked(0, 1) {
		t.Fatal("prefaulted arena not backed")
	}
}

func TestArenaErrors(t *testing.T) {
	if _, err := NewArena("x", 0, ArenaOptions{}); err == nil {
		t.Error("zero-size arena accepted")
	}
	a := newTestArena(t, 1<<16, ArenaOptions{})
	if err := a.Reserve(1<<16-10, 20); err == nil {
		t.Error("reserve past the end accepted")
	}
	if err := a.Release(1<<17, 1); err == nil {
		t.Error("release past the end accepted")
	}
	fd, err := unix.Dup(int(a.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "dup")
	defer f.Close()
	if _, err := OpenArena(f, 1<<17); err == nil {
		t.Error("mapping beyond the file's size accepted")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Bytes out of range did not panic")
			}
		}()
		a.Bytes(1<<16, 1)
	}()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults(0)
	if err != nil {
		t.Fatal(err)
	}
	ram, err := physicalMemory()
	if err != nil {
		t.Fatal(err)
	}
	if c.Capacity == 0 || c.Capacity > ram/3 || c.CreateTimeout != DefaultCreateTimeout {
		t.Fatalf("defaults %+v with %d bytes of RAM", c, ram)
	}
	if c, _ := (Config{}).withDefaults(4096); c.Capacity != 4096 {
		t.Fatalf("capacity %d, want the arena size", c.Capacity)
	}
	for _, bad := range []Config{{Capacity: 10, CreateTimeout: 1}, {Capacity: 4096, CreateTimeout: -1}} {
		if bad.validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	small, err := Config{Capacity: 1 << 20, Prefault: true}.NewArena("config-test")
	if err != nil {
		t.Fatal(err)
	}
	if small.Size() != 1<<20 || !small.allBacked(0, 0) {
		t.Errorf("Config.NewArena: size %d, backed %v", small.Size(), small.allBacked(0, 0))
	}
	_ = small.Close()
	if _, err := (Config{Capacity: 1}).NewArena("bad"); err == nil {
		t.Error("Config.NewArena accepted a 1-byte capacity")
	}
	a := newTestArena(t, 4096, ArenaOptions{})
	if _, err := NewProps(Config{Capacity: 8192}, a); err == nil {
		t.Error("capacity larger than the arena accepted")
	}
	if _, err := NewProps(Config{}, nil); err == nil {
		t.Error("nil arena accepted")
	}
}

// PrefaultView populates the chunks under a view once: again only after
// they were released; a view of another slice is left alone.
func TestArenaPrefaultViewOnce(t *testing.T) {
	const mib = 1 << 20
	a := newTestArena(t, 8*mib+100, ArenaOptions{})
	if err := a.Reserve(0, 8*mib+100); err != nil {
		t.Fatal(err)
	}
	if err := unix.Madvise(a.Bytes(0, mib), unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("this kernel cannot populate (5.14 and later can): %v", err)
	}
	calls := func(want uint64, what string) {
		t.Helper()
		if got := a.populates.Load(); got != want {
			t.Fatalf("%s: %d populates in all, want %d", what, got, want)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.PrefaultView(a.Bytes(mib+10, 2*mib))) // chunks 1-3
	calls(1, "a first view")
	must(a.PrefaultView(a.Bytes(mib, 3*mib))) // chunks 1-3 again
	calls(1, "the same chunks")
	must(a.PrefaultView(a.Bytes(0, 6*mib))) // 0, then 4-5: two runs
	calls(3, "chunks around mapped ones")
	must(a.Release(2*mib, mib)) // chunk 2 leaves the page tables
	must(a.Reserve(2*mib, mib))
	must(a.PrefaultView(a.Bytes(0, 6*mib)))
	calls(4, "a released chunk")
	must(a.PrefaultView(a.Bytes(8*mib, 100))) // the short last chunk
	calls(5, "the last chunk")
	must(a.PrefaultView(make([]byte, mib))) // not the arena's
	calls(5, "a slice of Go's")
	must(a.PrefaultView(nil))
	copy(a.Bytes(mib, 5), "hello")
	if string(a.Bytes(mib, 5)) != "hello" {
		t.Fatal("a prefaulted view does not hold what was written")
	}
	p := newTestArena(t, 2*mib, ArenaOptions{Prefault: true})
	must(p.PrefaultView(p.Bytes(0, 2*mib)))
	if p.populates.Load() != 0 {
		t.Fatal("a prefaulted arena's view populated again")
	}
	// a private arena's Reserve populates through this mapping
	v := newTestArena(t, 2*mib, ArenaOptions{Private: true})
	must(v.Reserve(0, 2*mib))
	must(v.PrefaultView(v.Bytes(0, 2*mib)))
	if v.populates.Load() != 0 {
		t.Fatal("a private arena's reserved view populated again")
	}
}
