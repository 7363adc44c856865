package data

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The run's monitor: a goroutine that, every tick while the run goes,
// redraws the progress lines (a line per stage) and looks for stages
// waiting for a CPU (cpu.go).

// monitor watches one run.
type monitor struct {
	r        *run
	out      io.Writer // progress lines; nil: none
	term     bool      // out is a terminal: redraw the lines in place
	interval time.Duration
	lines    int    // lines drawn last (a terminal redraws over them)
	last     string // what was drawn last
	stop     chan struct{}
	done     chan struct{}
}

// isTerminal says whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressOut is where progress goes: Config.Progress, else stderr when
// it is a terminal, else nowhere.
func (c Config) progressOut() (io.Writer, bool) {
	if c.Progress != nil {
		f, ok := c.Progress.(*os.File)
		return c.Progress, ok && isTerminal(f)
	}
	if isTerminal(os.Stderr) {
		return os.Stderr, true
	}
	return nil, false
}

func (c Config) progressInterval() time.Duration {
	if c.ProgressInterval <= 0 {
		return 500 * time.Millisecond
	}
	return c.ProgressInterval
}

// startMonitor starts the run's monitor if it has anything to do.
func (r *run) startMonitor(ctx context.Context) {
	if r.mon != nil { // the run's inputs (a union's, a join's right side) share its monitor
		return
	}
	out, term := r.cfg.progressOut()
	threshold := r.cfg.cpuWaitThreshold()
	if out == nil && threshold < 0 {
		return
	}
	tick := time.Second
	if threshold >= 0 {
		tick = min(tick, max(threshold/4, 10*time.Millisecond))
	}
	if out != nil {
		tick = min(tick, r.cfg.progressInterval())
	}
	m := &monitor{r: r, out: out, term: term, interval: r.cfg.progressInterval(), stop: make(chan struct{}), done: make(chan struct{})}
	r.mon = m
	go m.loop(ctx, tick)
}

// stopMonitor stops the monitor, closing the stages' waits and drawing
// the progress one last time.
func (r *run) stopMonitor() {
	m := r.mon
	if m == nil {
		return
	}
	close(m.stop)
	<-m.done
	now := time.Now()
	for _, s := range r.allSubs() {
		s.mu.Lock()
		s.cpuWait.end(now)
		s.mu.Unlock()
	}
	m.draw(true)
}

// allSubs lists the run's sub-stages as they are now.
func (r *run) allSubs() []*subStats {
	var out []*subStats
	for _, st := range r.stageList() {
		st.mu.Lock()
		out = append(out, st.subs...)
		st.mu.Unlock()
	}
	return out
}

func (m *monitor) loop(ctx context.Context, tick time.Duration) {
	defer close(m.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastDraw := time.Now()
	for {
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.r.checkCPUWait(ctx, m.r.allSubs(), now)
			if now.Sub(lastDraw) >= m.interval {
				m.draw(false)
				lastDraw = now
			}
		}
	}
}

// draw writes the progress lines if they changed (always when final).
func (m *monitor) draw(final bool) {
	if m.out == nil {
		return
	}
	text := m.r.progressLines()
	if text == m.last && !final || text == "" {
		return
	}
	var b strings.Builder
	if m.term && m.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", m.lines) // back to the first line drawn
	}
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if m.term {
			b.WriteString("\r\x1b[K")
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	m.lines = strings.Count(text, "\n")
	m.last = text
	_, _ = io.WriteString(m.out, b.String()) // progress is best effort
}

// progressLines renders a line per stage: its blocks done of those
// submitted, the tasks running, its rows, and for a pool its actors.
func (r *run) progressLines() string {
	var b strings.Builder
	for i, st := range r.stageList() {
		st.mu.Lock()
		subs := append([]*subStats(nil), st.subs...)
		st.mu.Unlock()
		var done, submitted int
		var rows int64
		var phase, actors string
		waiting := false
		for _, s := range subs {
			s.mu.Lock()
			done += len(s.wall)
			submitted += s.submittedTasks
			for _, n := range s.rows {
				rows += n
			}
			if s.submittedTasks > len(s.wall) && len(subs) > 1 {
				phase = " [" + s.name + "]"
			}
			if s.pool != nil {
				actors = fmt.Sprintf(", %d actors started", s.pool.started)
			}
			waiting = waiting || s.cpuWait.waiting
			s.mu.Unlock()
		}
		fmt.Fprintf(&b, "Stage %d %s%s: %d/%d blocks done, %d in flight, %d rows%s", i+1, st.name, phase, done, submitted, submitted-done, rows, actors)
		if waiting {
			b.WriteString(", waiting for a CPU")
		}
		b.WriteString("\n")
	}
	return b.String()
}
