package main

import (
	"fmt"
	"io"
	"time"
)

// progress reports phases and steps on stderr, one line per step decile.
type progress struct {
	w     io.Writer
	start time.Time
	last  int
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

func (p *progress) phase(name string) {
	p.last = -1
	fmt.Fprintf(p.w, "dataset: [%6.1fs] %s\n", time.Since(p.start).Seconds(), name)
}

func (p *progress) step(done, total int) {
	if decile := done * 10 / total; decile != p.last {
		p.last = decile
		fmt.Fprintf(p.w, "dataset: [%6.1fs]   %d/%d\n", time.Since(p.start).Seconds(), done, total)
	}
}
