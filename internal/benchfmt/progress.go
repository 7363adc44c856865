package benchfmt

import (
	"fmt"
	"io"
	"time"
)

// Progress reports a benchmark program's phases on stderr, each with the
// time since the start, and the steps of a phase one line per decile:
//
//	sort: [   1.2s] generate and sample 100 chunks
//	sort: [   2.0s]   10/100
type Progress struct {
	w     io.Writer
	name  string
	start time.Time
	last  int
}

// NewProgress reports on w, each line starting with name.
func NewProgress(w io.Writer, name string) *Progress {
	return &Progress{w: w, name: name, start: time.Now(), last: -1}
}

// Phase starts a phase.
func (p *Progress) Phase(what string) {
	p.last = -1
	fmt.Fprintf(p.w, "%s: [%6.1fs] %s\n", p.name, time.Since(p.start).Seconds(), what)
}

// Step reports done of total steps of the phase when a new decile is
// reached.
func (p *Progress) Step(done, total int) {
	if total <= 0 {
		return
	}
	if decile := done * 10 / total; decile != p.last {
		p.last = decile
		fmt.Fprintf(p.w, "%s: [%6.1fs]   %d/%d\n", p.name, time.Since(p.start).Seconds(), done, total)
	}
}
