package jobs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestPruneBinaries: past the bound, the least recently used binaries go
// first, until the rest fit; one a job that has not finished uses, and
// one used within binaryIdle, stay whatever their age; under the bound
// nothing goes.
func TestPruneBinaries(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	for _, b := range []struct {
		sum   string
		bytes int
		age   time.Duration
	}{
		{"aa", 100, 10 * time.Hour}, // oldest, but a running job's
		{"bb", 100, 9 * time.Hour},
		{"cc", 100, 8 * time.Hour},
		{"dd", 100, 7 * time.Hour},
		{"ee", 100, 30 * time.Minute}, // used within binaryIdle
	} {
		d := filepath.Join(dir, b.sum)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "driver"), make([]byte, b.bytes), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, now.Add(-b.age), now.Add(-b.age)); err != nil {
			t.Fatal(err)
		}
	}
	keep := map[string]bool{"aa": true}
	if removed, _, err := pruneBinaries(dir, 500, keep, now); err != nil || len(removed) != 0 {
		t.Fatalf("under the bound: removed %v, %v", removed, err)
	}
	removed, freed, err := pruneBinaries(dir, 300, keep, now)
	if err != nil || !slices.Equal(removed, []string{"bb", "cc"}) || freed != 200 {
		t.Fatalf("bound 300 of 500 bytes: removed %v (%d bytes), %v; want bb and cc", removed, freed, err)
	}
	left, err := storedBinaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, b := range left {
		sums = append(sums, b.sum)
	}
	slices.Sort(sums)
	if !slices.Equal(sums, []string{"aa", "dd", "ee"}) {
		t.Fatalf("left %v", sums)
	}
	// A bound of 0 takes dd alone: aa is a running job's, ee recent.
	if removed, _, err := pruneBinaries(dir, 0, keep, now); err != nil || !slices.Equal(removed, []string{"dd"}) {
		t.Fatalf("bound 0: removed %v, %v; want dd", removed, err)
	}
	// Used again (an upload or a submission found it), a binary is
	// recent.
	touchBinary(filepath.Join(dir, "aa", "driver"), now)
	if removed, _, err := pruneBinaries(dir, 0, nil, now.Add(time.Minute)); err != nil || len(removed) != 0 {
		t.Fatalf("after a use: removed %v, %v", removed, err)
	}
	if removed, _, err := pruneBinaries(filepath.Join(dir, "missing"), 0, nil, now); err != nil || len(removed) != 0 {
		t.Fatalf("no directory: %v, %v", removed, err)
	}
}
