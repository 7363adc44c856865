package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCSVKinds: each value's narrowest kind, and the kind holding two.
func TestCSVKinds(t *testing.T) {
	for v, want := range map[string]csvKind{
		"10": csvInt, "-3": csvInt, "2.5": csvFloat, "1e3": csvFloat, "true": csvBool, "F": csvBool,
		"2026-01-02": csvDate, "2026-01-02 10:00:00": csvTimestamp, "2026-01-02T10:00:00.5": csvTimestamp,
		"2026-01-02T10:00:00Z": csvTimestampUTC, "2026-01-02T10:00:00+01:00": csvTimestampUTC,
		"apple": csvString, "1,5": csvString, "2026-13-45": csvString,
	} {
		if got := classify(v); got != want {
			t.Errorf("classify(%q) = %d, want %d", v, got, want)
		}
	}
	for _, c := range []struct{ a, b, want csvKind }{
		{csvNull, csvInt, csvInt}, {csvInt, csvNull, csvInt}, {csvInt, csvFloat, csvFloat}, {csvFloat, csvInt, csvFloat},
		{csvDate, csvTimestamp, csvTimestamp}, {csvInt, csvBool, csvString}, {csvTimestamp, csvTimestampUTC, csvString},
		{csvDate, csvTimestampUTC, csvString}, {csvFloat, csvString, csvString}, {csvNull, csvNull, csvNull},
	} {
		if got := widenKind(c.a, c.b); got != c.want {
			t.Errorf("widenKind(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if csvNull.arrow().ID() != csvString.arrow().ID() {
		t.Error("a column of nulls only is not a string column")
	}
}

// BenchmarkCSVSchema: what the driver spends inferring a read's columns
// (it reads the first MiB of each file), per file of 4 MiB, against
// what a read task spends parsing such a file whole (timed after the
// loop, the same number of times).
func BenchmarkCSVSchema(b *testing.B) {
	dir := b.TempDir()
	var rows strings.Builder
	rows.WriteString("id,price,day,name\n")
	for i := 0; rows.Len() < 4<<20; i++ {
		fmt.Fprintf(&rows, "%d,%d.%02d,2026-01-%02d,item %d\n", i, i%1000, i%100, 1+i%28, i)
	}
	var paths []string
	for i := range 8 {
		p := filepath.Join(dir, fmt.Sprintf("part-%d.csv", i))
		if err := os.WriteFile(p, []byte(rows.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	var fields []csvField
	start := time.Now()
	for range b.N {
		var err error
		if fields, err = csvSchema(paths, csvDialect{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	sniff := time.Since(start)
	b.StopTimer()
	start = time.Now()
	for range b.N {
		for _, p := range paths {
			recs, err := readCSVFile(p, csvDialect{}, fields)
			if err != nil {
				b.Fatal(err)
			}
			releaseAll(recs)
		}
	}
	read := time.Since(start)
	perFile := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*len(paths)) }
	b.ReportMetric(perFile(sniff), "sniff_us/file")
	b.ReportMetric(perFile(read), "task_read_us/file")
	b.ReportMetric(float64(sniff)/float64(read), "ratio")
}

// TestCSVFits: a value fits its own kind and the kinds that hold it.
func TestCSVFits(t *testing.T) {
	for _, c := range []struct {
		k    csvKind
		v    string
		want bool
	}{
		{csvInt, "10", true}, {csvInt, "2.5", false}, {csvFloat, "10", true}, {csvFloat, "x", false},
		{csvBool, "true", true}, {csvBool, "10", false}, {csvDate, "2026-01-02", true}, {csvDate, "2026-01-02 10:00:00", false},
		{csvTimestamp, "2026-01-02 10:00:00", true}, {csvTimestamp, "2026-01-02", true}, {csvTimestamp, "2026-01-02T10:00:00Z", false},
		{csvTimestampUTC, "2026-01-02T10:00:00Z", true}, {csvTimestampUTC, "2026-01-02 10:00:00", false},
		{csvString, "anything", true}, {csvNull, "10", false},
	} {
		if got := fits(c.k, c.v); got != c.want {
			t.Errorf("fits(%d, %q) = %v, want %v", c.k, c.v, got, c.want)
		}
	}
}

// TestSniffHead: whole lines of the first MiB; a first line longer than
// that is read whole.
func TestSniffHead(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", sniffBytes+10) + "\nnext\n"
	short := "a,b\n1,2\n"
	many := strings.Repeat("0123456789\n", sniffBytes/11+100)
	for name, c := range map[string]struct{ content, want string }{
		"short":      {short, short},
		"long line":  {long, long[:sniffBytes+11]},
		"many lines": {many, many[:(sniffBytes/11)*11]},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := sniffHead(p)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %d bytes, %v; want %d bytes", name, len(got), err, len(c.want))
		}
	}
}
