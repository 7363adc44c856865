package main

import (
	"fmt"
	"io"
	"time"
)

// progress reports phases on stderr with the time since the start; the
// graph runs draw graph's progress bar between them.
type progress struct {
	w     io.Writer
	start time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

func (p *progress) phase(name string) {
	fmt.Fprintf(p.w, "arrays: [%6.1fs] %s\n", time.Since(p.start).Seconds(), name)
}
