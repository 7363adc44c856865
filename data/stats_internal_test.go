package data

import (
	"strings"
	"testing"
	"time"
)

// A stage whose tasks were submitted but none finished (a run that
// failed) tells no time: it used to print the time from the first
// submit to the zero time, -9.22e+09 s.
func TestStatsOfAStageWithNoTaskFinished(t *testing.T) {
	var s subStats
	var b strings.Builder
	s.format(&b, "Substage 2 sort_reduce")
	if got, want := b.String(), "Substage 2 sort_reduce: 0/0 blocks executed\n"; got != want {
		t.Fatalf("no task: %q, want %q", got, want)
	}
	s.submitted()
	b.Reset()
	s.format(&b, "Substage 2 sort_reduce")
	if got, want := b.String(), "Substage 2 sort_reduce: 0/1 blocks executed\n"; got != want {
		t.Fatalf("one task submitted, none finished: %q, want %q", got, want)
	}
	s.task(time.Millisecond, time.Millisecond, 10)
	b.Reset()
	s.format(&b, "Substage 2 sort_reduce")
	if got, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(got, "Substage 2 sort_reduce: 1/1 blocks executed in ") || strings.Contains(got, " -") {
		t.Fatalf("one task finished: %q", got)
	}
}
