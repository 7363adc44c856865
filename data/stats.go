package data

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// stageStats is what one (fused) stage did; an all-to-all stage has a
// sub-stage per phase (sort_sample, sort_map, sort_reduce).
type stageStats struct {
	name  string
	read  *readInfo  // a read stage's columns and row groups
	notes []string   // how the stage's joins run
	cpu   float64    // CPU each task (or actor) of the stage holds
	mu    sync.Mutex // guards subs while the run goes (the run's monitor reads them)
	subs  []*subStats
}

// newSub adds a sub-stage (a phase, or the stage itself).
func (s *stageStats) newSub(name string) *subStats {
	sub := &subStats{name: name, taskCPU: s.cpu}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	return sub
}

// subStats accumulates the tasks of one stage or phase.
type subStats struct {
	name           string
	mu             sync.Mutex
	start, end     time.Time
	submittedTasks int
	wall, cpu      []time.Duration
	rows           []int64
	pool           *poolStats // an actor stage's pool
	taskCPU        float64    // CPU each task (or actor) holds
	// progressAt is when a task last finished, or when tasks started to
	// be pending after none was; cpuWait is the stage's waits for a CPU
	// (cpu.go).
	progressAt time.Time
	cpuWait    cpuWait
	// retriedTasks finished after failed attempts, failedAttempts of them
	// (a read's own errors, a worker that died).
	retriedTasks, failedAttempts int
	// readBytes: the bytes of files the stage's read tasks read
	readBytes int64
}

func (s *subStats) submitted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.submittedTasks == 0 {
		s.start = time.Now()
	}
	if s.submittedTasks == len(s.wall) {
		s.progressAt = time.Now()
	}
	s.submittedTasks++
}

func (s *subStats) task(wall, cpu time.Duration, rows int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wall = append(s.wall, wall)
	s.cpu = append(s.cpu, cpu)
	s.rows = append(s.rows, rows)
	s.end = time.Now()
	s.progressAt = s.end
}

// retried counts a finished task's failed attempts (its attempt number).
func (s *subStats) retried(attempt int) {
	if attempt <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retriedTasks++
	s.failedAttempts += attempt
}

func (s *subStats) format(b *strings.Builder, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.wall) == 0 { // none finished: no time to tell (a run that failed, or still going)
		fmt.Fprintf(b, "%s: 0/%d blocks executed\n", title, s.submittedTasks)
	} else {
		fmt.Fprintf(b, "%s: %d/%d blocks executed in %s\n", title, len(s.wall), s.submittedTasks, secs(s.end.Sub(s.start)))
	}
	s.cpuWait.format(b)
	if s.pool != nil {
		s.pool.format(b)
	}
	if len(s.wall) == 0 {
		return
	}
	durs := func(ds []time.Duration) string {
		lo, hi, sum := ds[0], ds[0], time.Duration(0)
		for _, d := range ds {
			lo, hi, sum = min(lo, d), max(hi, d), sum+d
		}
		return fmt.Sprintf("%s min, %s max, %s mean, %s total", secs(lo), secs(hi), secs(sum/time.Duration(len(ds))), secs(sum))
	}
	lo, hi, sum := s.rows[0], s.rows[0], int64(0)
	for _, r := range s.rows {
		lo, hi, sum = min(lo, r), max(hi, r), sum+r
	}
	fmt.Fprintf(b, "* Remote wall time: %s\n", durs(s.wall))
	fmt.Fprintf(b, "* Remote cpu time: %s\n", durs(s.cpu))
	fmt.Fprintf(b, "* Output num rows: %d min, %d max, %d mean, %d total\n", lo, hi, sum/int64(len(s.rows)), sum)
	if s.retriedTasks > 0 {
		fmt.Fprintf(b, "* Retried: %d tasks after %d failed attempts\n", s.retriedTasks, s.failedAttempts)
	}
	if s.readBytes > 0 {
		fmt.Fprintf(b, "* Read by tasks: %s of files\n", mb(s.readBytes))
	}
}

// span is when the sub-stage's first task was submitted and its last
// finished (zero: none yet).
func (s *subStats) span() (start, end time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.start, s.end
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3gs", d.Seconds()) }

// format prints the stats of a run, a stage after another, as Ray
// Datasets' stats show them.
func formatStats(stages []*stageStats) string {
	var b strings.Builder
	for i, st := range stages {
		title := fmt.Sprintf("Stage %d %s", i+1, st.name)
		if len(st.subs) == 1 {
			st.subs[0].format(&b, title)
			st.formatNotes(&b)
			continue
		}
		fmt.Fprintf(&b, "%s:\n", title)
		st.formatNotes(&b)
		for j, sub := range st.subs {
			sub.format(&b, fmt.Sprintf("Substage %d %s", j, sub.name))
			if j > 0 {
				start, _ := sub.span()
				if _, prevEnd := st.subs[j-1].span(); !start.IsZero() && start.Before(prevEnd) {
					fmt.Fprintf(&b, "* Overlapped substage %d by %s\n", j-1, secs(prevEnd.Sub(start)))
				}
			}
		}
	}
	return b.String()
}

func (s *subStats) addRead(n int64) {
	s.mu.Lock()
	s.readBytes += n
	s.mu.Unlock()
}

// addNote adds a line on how the stage's operation (topic: Join, Sort,
// ...) runs, learnt as it runs.
func (s *stageStats) addNote(topic, n string) {
	s.mu.Lock()
	s.notes = append(s.notes, topic+": "+n)
	s.mu.Unlock()
}

func (s *stageStats) formatNotes(b *strings.Builder) {
	if s.read != nil {
		s.read.format(b)
	}
	s.mu.Lock()
	notes := slices.Clone(s.notes)
	s.mu.Unlock()
	for _, n := range notes {
		fmt.Fprintf(b, "* %s\n", n)
	}
}
