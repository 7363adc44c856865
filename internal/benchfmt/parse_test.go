package benchfmt

import (
	"bytes"
	"strings"
	"testing"
)

func TestByMetric(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range []Record{NewRecord("b", "wall_s", 2, "s", "base_s", 1, nil), NewRecord("b", "peak", 3, "bytes", "base", 4, nil)} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ByMetric(&buf)
	if err != nil || len(got) != 2 || got["wall_s"]["ratio"] != 2.0 || got["peak"]["value"] != 3.0 {
		t.Fatalf("ByMetric: %v, %v", got, err)
	}
	if _, err := ParseLines(strings.NewReader("{\"metric\":1}\nnot json\n")); err == nil {
		t.Fatal("ParseLines accepted a line that is not JSON")
	}
}
