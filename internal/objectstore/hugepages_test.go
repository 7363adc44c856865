package objectstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// fakeTHP points thpDir at a directory holding the given settings
// (relative path: file contents) for the test.
func fakeTHP(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := thpDir
	thpDir = dir
	t.Cleanup(func() { thpDir = old })
}

func TestShmemHugePagesPolicy(t *testing.T) {
	const global, perSize = "shmem_enabled", "hugepages-2048kB/shmem_enabled"
	for _, c := range []struct {
		name    string
		files   map[string]string
		allowed bool
		policy  string
	}{
		{"advise", map[string]string{global: "always within_size [advise] never deny force"}, true, "advise"},
		{"never", map[string]string{global: "always within_size advise [never] deny force"}, false, "never"},
		{"deny", map[string]string{global: "always within_size advise never [deny] force"}, false, "deny"},
		{"per-size inherits", map[string]string{global: "[always] within_size advise never deny force", perSize: "always [inherit] within_size advise never"}, true, "always"},
		{"per-size refuses", map[string]string{global: "always within_size [advise] never deny force", perSize: "always inherit within_size advise [never]"}, false, "never"},
		{"per-size allows", map[string]string{global: "always within_size advise [never] deny force", perSize: "always inherit [within_size] advise never"}, true, "within_size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeTHP(t, c.files)
			allowed, policy, err := ShmemHugePages()
			if err != nil || allowed != c.allowed || policy != c.policy {
				t.Fatalf("ShmemHugePages() = %v, %q, %v; want %v, %q", allowed, policy, err, c.allowed, c.policy)
			}
			huge, err := hugePagesFor(HugePagesAuto, false)
			if err != nil || huge != c.allowed {
				t.Fatalf("auto: %v, %v; want %v", huge, err, c.allowed)
			}
			huge, err = hugePagesFor(HugePagesOn, false)
			if c.allowed != (err == nil) || huge != c.allowed {
				t.Fatalf("on: %v, %v", huge, err)
			}
			if err != nil && (!errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "echo advise >") || !strings.Contains(err.Error(), strconv.Quote(c.policy))) {
				t.Fatalf("on, refused: %v; want an Unavailable error naming the policy and how to allow huge pages", err)
			}
			if huge, err := hugePagesFor(HugePagesOff, false); huge || err != nil {
				t.Fatalf("off: %v, %v", huge, err)
			}
		})
	}
	t.Run("no transparent huge pages", func(t *testing.T) {
		old := thpDir
		thpDir = filepath.Join(t.TempDir(), "missing")
		t.Cleanup(func() { thpDir = old })
		if huge, err := hugePagesFor(HugePagesAuto, false); huge || err != nil {
			t.Fatalf("auto: %v, %v", huge, err)
		}
		if _, err := hugePagesFor(HugePagesOn, false); !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "no transparent huge pages") {
			t.Fatalf("on: %v", err)
		}
		if _, err := NewArena("objectstore-test", 1<<20, ArenaOptions{HugePages: HugePagesOn}); !errors.Is(err, errs.ErrUnavailable) {
			t.Fatalf("NewArena with huge pages on: %v", err)
		}
	})
}

// A private arena is anonymous memory: the setting that decides is
// enabled, not shmem_enabled.
func TestAnonHugePagesPolicy(t *testing.T) {
	for _, c := range []struct {
		name    string
		files   map[string]string
		allowed bool
		policy  string
	}{
		{"madvise", map[string]string{"enabled": "always [madvise] never", "shmem_enabled": "always within_size advise [never] deny force"}, true, "madvise"},
		{"always", map[string]string{"enabled": "[always] madvise never"}, true, "always"},
		{"never", map[string]string{"enabled": "always madvise [never]", "shmem_enabled": "always within_size [advise] never deny force"}, false, "never"},
		{"per-size refuses", map[string]string{"enabled": "always [madvise] never", "hugepages-2048kB/enabled": "always inherit madvise [never]"}, false, "never"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeTHP(t, c.files)
			allowed, policy, err := AnonHugePages()
			if err != nil || allowed != c.allowed || policy != c.policy {
				t.Fatalf("AnonHugePages() = %v, %q, %v; want %v, %q", allowed, policy, err, c.allowed, c.policy)
			}
			if huge, err := hugePagesFor(HugePagesAuto, true); err != nil || huge != c.allowed {
				t.Fatalf("auto: %v, %v; want %v", huge, err, c.allowed)
			}
			huge, err := hugePagesFor(HugePagesOn, true)
			if c.allowed != (err == nil) || huge != c.allowed {
				t.Fatalf("on: %v, %v", huge, err)
			}
			if err != nil && (!errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "echo madvise >") || !strings.Contains(err.Error(), "/enabled")) {
				t.Fatalf("on, refused: %v; want an Unavailable error saying how to allow huge pages for ordinary memory", err)
			}
		})
	}
}

func TestParseHugePages(t *testing.T) {
	for _, h := range []HugePages{HugePagesAuto, HugePagesOn, HugePagesOff} {
		if got, err := ParseHugePages(h.String()); err != nil || got != h {
			t.Fatalf("ParseHugePages(%q) = %v, %v", h.String(), got, err)
		}
	}
	if _, err := ParseHugePages("yes"); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("ParseHugePages(yes): %v", err)
	}
}

// pmdMapped returns how many bytes of a's mapping in this process are
// mapped by huge page entries (smaps' ShmemPmdMapped, or AnonHugePages
// for a private arena).
func pmdMapped(t *testing.T, a *Arena) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&a.mem[0])))
	field := "ShmemPmdMapped:"
	if a.Private() {
		field = "AnonHugePages:"
	}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = strings.HasPrefix(line, start)
			continue
		}
		if in && len(fields) >= 2 && fields[0] == field {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s for the arena's mapping (%s...) in /proc/self/smaps", field, start)
	return 0
}

// TestArenaHugePages runs where the system gives shared memory huge pages
// (shmem_enabled advise or always): a reserved range is backed by them,
// reserving again keeps what is written, and an arena set off gets none.
func TestArenaHugePages(t *testing.T) {
	if allowed, policy, err := ShmemHugePages(); !allowed {
		t.Skipf("this system gives shared memory no huge pages (shmem_enabled %q, %v)", policy, err)
	}
	testArenaHugePages(t, false)
}

// TestPrivateArenaHugePages is the same for a private arena, which runs
// where the system gives ordinary memory huge pages (enabled madvise or
// always, the common default).
func TestPrivateArenaHugePages(t *testing.T) {
	if allowed, policy, err := AnonHugePages(); !allowed {
		t.Skipf("this system gives ordinary memory no huge pages (enabled %q, %v)", policy, err)
	}
	testArenaHugePages(t, true)
}

func testArenaHugePages(t *testing.T, private bool) {
	const mib = 1 << 20
	for _, mode := range []HugePages{HugePagesAuto, HugePagesOn, HugePagesOff} {
		a := newTestArena(t, 64*mib, ArenaOptions{HugePages: mode, Private: private})
		if a.HugePages() != (mode != HugePagesOff) {
			t.Fatalf("%v: HugePages() = %v", mode, a.HugePages())
		}
		if err := a.Reserve(8*mib, 16*mib); err != nil {
			t.Fatal(err)
		}
		view := a.Bytes(8*mib, 16*mib)
		for i := range view {
			view[i] = byte(i)
		}
		want := bytes.Clone(view)
		a.clearBacked(chunks(8*mib, 16*mib))
		if err := a.Reserve(12*mib, mib); err != nil { // backs a chunk again, under live data
			t.Fatal(err)
		}
		if !bytes.Equal(view, want) {
			t.Fatalf("%v: reserving a written range again changed it", mode)
		}
		got := pmdMapped(t, a)
		switch {
		case mode == HugePagesOff && got != 0:
			t.Fatalf("off: %d bytes on huge pages", got)
		case mode != HugePagesOff && got < 16*mib:
			t.Fatalf("%v: %d of %d reserved bytes on huge pages", mode, got, 16*mib)
		}
	}
}
