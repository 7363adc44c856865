package objectstore

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseCandidates reads a snapshot written as space-separated objects,
// "<name>:<size>@<last access in s>[,flag...]" with the flags unsealed,
// pinned, busy and disk.
func parseCandidates(t *testing.T, spec string) []SpillCandidate {
	t.Helper()
	var out []SpillCandidate
	for _, f := range strings.Fields(spec) {
		name, rest, _ := strings.Cut(f, ":")
		sizeAt, flags, _ := strings.Cut(rest, ",")
		size, at, _ := strings.Cut(sizeAt, "@")
		n, err1 := strconv.ParseUint(size, 10, 64)
		sec, err2 := strconv.Atoi(at)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad candidate %q", f)
		}
		c := SpillCandidate{ID: objID(name), Size: n, Sealed: true, LastAccess: time.Unix(int64(sec), 0)}
		for _, fl := range strings.Split(flags, ",") {
			switch fl {
			case "":
			case "unsealed":
				c.Sealed = false
			case "pinned":
				c.Pinned = true
			case "busy":
				c.Busy = true
			case "disk":
				c.OnDisk = true
			default:
				t.Fatalf("bad flag %q", fl)
			}
		}
		out = append(out, c)
	}
	return out
}

// formatPlan prints a plan as "evict a b | batch c d | batch e | bytes=N",
// then "| disk short" if objects were passed over for lack of disk.
func formatPlan(p SpillPlan) string {
	var parts []string
	if len(p.Evict) > 0 {
		names := make([]string, len(p.Evict))
		for i, id := range p.Evict {
			names[i] = objName(id)
		}
		parts = append(parts, "evict "+strings.Join(names, " "))
	}
	for _, b := range p.Batches {
		names := make([]string, len(b))
		for i, id := range b {
			names[i] = objName(id)
		}
		parts = append(parts, "batch "+strings.Join(names, " "))
	}
	parts = append(parts, fmt.Sprintf("bytes=%d", p.Bytes))
	if p.DiskShort {
		parts = append(parts, "disk short")
	}
	return strings.Join(parts, " | ")
}

func TestPickSpill(t *testing.T) {
	limits := SpillLimits{BatchBytes: 100, MaxObjects: 3}
	for _, tc := range []struct {
		name     string
		snapshot string
		need     uint64
		limits   SpillLimits
		want     string
	}{
		{"nothing needed", "a:10@1", 0, limits, "bytes=0"},
		{"least recently used first", "a:10@3 b:10@1 c:10@2", 15, limits, "batch b c | bytes=20"},
		{"ties go to the smaller id", "c:10@1 a:10@1 b:10@1", 25, limits, "batch a b c | bytes=30"},
		{"only sealed, unpinned, idle objects",
			"a:10@1,pinned b:10@2,unsealed c:10@3,busy d:10@4 e:10@5", 1000, limits, "batch d e | bytes=20"},
		{"batches close at the object limit", "a:1@1 b:1@2 c:1@3 d:1@4 e:1@5", 5, limits, "batch a b c | batch d e | bytes=5"},
		{"batches close at the byte limit", "a:60@1 b:30@2 c:20@3 d:10@4", 120, limits, "batch a b | batch c d | bytes=120"},
		{"a large object goes alone, small ones still fuse", "a:40@1 b:250@2 c:40@3 d:40@4", 1000, limits,
			"batch b | batch a c | batch d | bytes=370"},
		{"an object exactly at the batch size goes alone", "a:100@1 b:1@2", 101, limits, "batch a | batch b | bytes=101"},
		{"disk copies are evicted first, without writing", "a:10@1 b:10@9,disk c:10@5,disk d:10@2", 25, limits,
			"evict c b | batch a | bytes=30"},
		{"writes blocked: only evictions", "a:10@1 b:10@9,disk", 100, SpillLimits{BatchBytes: 100, MaxObjects: 3, WritesBlocked: true},
			"evict b | bytes=10"},
		{"not enough: everything eligible", "a:10@1 b:10@2,pinned", 1000, limits, "batch a | bytes=10"},
		{"max objects 0 means 1", "a:1@1 b:1@2", 2, SpillLimits{BatchBytes: 100}, "batch a | batch b | bytes=2"},
		// Each object takes a page on disk, each file a page more for
		// its index.
		{"disk: batches cut to its free space", "a:10@1 b:10@2 c:10@3", 30, SpillLimits{BatchBytes: 100, MaxObjects: 3, DiskLimited: true, DiskBytes: 3 * 4096},
			"batch a b | bytes=20 | disk short"},
		{"disk: an object too large is passed over, smaller ones go", "a:9000@1 b:10@2", 9010, SpillLimits{BatchBytes: 100000, MaxObjects: 3, DiskLimited: true, DiskBytes: 3 * 4096},
			"batch b | bytes=10 | disk short"},
		{"disk: a large object alone", "a:9000@1 b:10@2", 9010, SpillLimits{BatchBytes: 100, MaxObjects: 3, DiskLimited: true, DiskBytes: 4 * 4096},
			"batch a | bytes=9000 | disk short"},
		{"disk: evictions need none", "a:10@1 b:10@2,disk", 20, SpillLimits{BatchBytes: 100, MaxObjects: 3, DiskLimited: true},
			"evict b | bytes=10 | disk short"},
		{"Ray's defaults: 2000 objects per file", manySmall(2500), 2500,
			SpillLimits{BatchBytes: DefaultSpillBatchBytes, MaxObjects: DefaultSpillMaxObjects}, "2 batches of 2000+500, bytes=2500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := PickSpill(parseCandidates(t, tc.snapshot), tc.need, tc.limits)
			got := formatPlan(plan)
			if strings.HasPrefix(tc.want, "2 batches") {
				got = fmt.Sprintf("%d batches of %d+%d, bytes=%d", len(plan.Batches), len(plan.Batches[0]), len(plan.Batches[1]), plan.Bytes)
			}
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// manySmall returns n one-byte candidates.
func manySmall(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "s%d:1@%d ", i, i)
	}
	return b.String()
}
