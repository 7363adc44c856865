package benchfmt

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
)

func TestRecordJSONKeys(t *testing.T) {
	r := NewRecord("broadcast", "wall_s", 7.5, "s", "ideal_parallel_compute_s", 5,
		map[string]any{"size_bytes": 1 << 30, "workers": 2, "worker_mode": "process"})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bench":"broadcast","metric":"wall_s","value":7.5,"unit":"s",` +
		`"baseline":"ideal_parallel_compute_s","baseline_value":5,"ratio":1.5,` +
		`"config":{"size_bytes":1073741824,"worker_mode":"process","workers":2}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestRecordVerifiedAndZeroBaseline(t *testing.T) {
	r := NewRecord("sort", "wall_s", 3, "s", "in_memory_sort_s", 0, nil).WithVerified(true)
	if r.Ratio != 0 {
		t.Fatalf("ratio %v with a zero baseline", r.Ratio)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bench":"sort","metric":"wall_s","value":3,"unit":"s",` +
		`"baseline":"in_memory_sort_s","baseline_value":0,"verified":true,"config":{}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	if f := r.WithVerified(false); !strings.Contains(mustMarshal(t, f), `"verified":false`) {
		t.Fatal("verified:false not written")
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRecordRoundTrip(t *testing.T) {
	in := NewRecord("b", "ops_per_s", 100, "1/s", "goroutines_per_s", 400, map[string]any{"n": 1.0}).WithVerified(true)
	var out Record
	if err := json.Unmarshal([]byte(mustMarshal(t, in)), &out); err != nil {
		t.Fatal(err)
	}
	if out.Ratio != 0.25 || out.Verified == nil || !*out.Verified || out.Config["n"] != 1.0 || out.Metric != "ops_per_s" {
		t.Fatalf("round trip: %+v", out)
	}
}

func TestWithConfigCopies(t *testing.T) {
	base := map[string]any{"a": 1}
	r := NewRecord("b", "m", 1, "s", "x", 1, base).WithConfig(map[string]any{"b": 2, "a": 3})
	if len(base) != 1 || base["a"] != 1 {
		t.Fatalf("WithConfig modified the original map: %v", base)
	}
	if r.Config["a"] != 3 || r.Config["b"] != 2 {
		t.Fatalf("config %v", r.Config)
	}
}

func TestWriterOneLinePerRecord(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := w.Write(NewRecord("b", "m", float64(i), "s", "x", 1, map[string]any{"html": "<&>"})); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if !strings.Contains(l, `"<&>"`) {
			t.Fatalf("HTML escaped: %q", l)
		}
	}
}

func TestWriterRejectsNaN(t *testing.T) {
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write(NewRecord("b", "m", math.NaN(), "s", "x", 1, nil)); err == nil {
		t.Fatal("NaN written")
	}
	if buf.Len() != 0 {
		t.Fatalf("partial output %q", buf.String())
	}
}

func TestWriteAllInOrderStopsAtError(t *testing.T) {
	var buf bytes.Buffer
	recs := []Record{
		NewRecord("b", "first", 1, "s", "", 0, nil),
		NewRecord("b", "second", 2, "s", "", 0, nil),
		NewRecord("b", "bad", math.NaN(), "s", "", 0, nil),
		NewRecord("b", "after", 3, "s", "", 0, nil),
	}
	if err := WriteAll(&buf, recs); err == nil {
		t.Fatal("WriteAll wrote a NaN record")
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"first"`) || !strings.Contains(lines[1], `"second"`) {
		t.Fatalf("lines %q, want first and second only", lines)
	}
}
