package benchfmt

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "x")
	p.Phase("one")
	for i := 1; i <= 20; i++ {
		p.Step(i, 20)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 12 || !strings.HasSuffix(lines[0], "] one") || !strings.HasSuffix(lines[11], "20/20") {
		t.Fatalf("progress lines:\n%s", buf.String())
	}
}
