package sim

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/atoll-runtime/atoll/internal/runtime"
)

// A Session is a simulated run that a program runs in: the goroutine that
// started it is the driver's thread (atoll.Init with WithSimulation, or
// Start), so a main written against the SDK runs on the simulated cluster
// unchanged. The simulator's loop runs on a goroutine of its own, one of
// the two at a time: while the program runs, the cluster waits; when the
// program waits (a Get), the cluster runs until it can go on.
type Session struct {
	w      *World
	cfg    Config
	start  time.Time
	driver *thread
	// stopping: the program asked to end (Stop); done is closed once the
	// run ended, with res its result.
	stopping bool
	done     chan struct{}
	res      *Result
}

// Start starts a session for the calling goroutine, which becomes the
// driver's thread once the cluster booted: SDK calls it makes with the
// returned context go to the simulated driver. End it with Stop, on the
// same goroutine. Limits: SDK calls from other goroutines are not
// simulated (they would race the simulation), nor real time or real I/O.
func Start(cfg Config) (*Session, context.Context) {
	cfg = cfg.withDefaults()
	w := newWorld(cfg)
	schedule := cfg.Schedule
	if schedule == nil && !cfg.NoFaults {
		schedule = Generate(cfg.Seed, cfg.Nodes, cfg.Faults)
	}
	s := &Session{w: w, cfg: cfg, start: time.Now(), done: make(chan struct{})}
	s.res = &Result{Seed: cfg.Seed, Schedule: schedule}
	w.boot(schedule)
	w.runUntil(Epoch.Add(cfg.Boot), func() bool { return false })
	if w.now.Before(Epoch.Add(cfg.Boot)) {
		w.now = Epoch.Add(cfg.Boot)
	}
	s.driver = w.adopt(w.driver, "driver")
	go s.loop()
	return s, runtime.WithRuntime(s.driver.ctx, w.driver.rt)
}

// adopt makes the calling goroutine a thread of p, running now.
func (w *World) adopt(p *proc, name string) *thread {
	w.threadID++
	t := &thread{w: w, id: w.threadID, name: name, p: p, state: threadRunning, wake: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancelCause(context.WithValue(context.Background(), threadKey{}, t))
	w.threads = append(w.threads, t)
	p.threads = append(p.threads, t)
	w.current = t
	return t
}

// loop runs the simulation whenever the program's thread waits, until
// the program stops the session.
func (s *Session) loop() {
	w := s.w
	<-w.yield // the program's first wait (or Stop)
	w.current = nil
	limit := Epoch.Add(s.cfg.Boot + s.cfg.Deadline)
	for !s.stopping && w.failure == nil {
		if w.now.After(limit) {
			w.fail("hang", "the program did not end within %v of simulated time; parked threads:%s", s.cfg.Deadline, w.parkedReport())
			break
		}
		if !w.step() {
			break
		}
	}
	if w.failure == nil {
		w.end()
	}
	w.check.final()
	for _, c := range s.cfg.Checkers {
		if w.failure != nil {
			break
		}
		if err := c.Check(w.history); err != nil {
			w.fail(c.Name, "%v", err)
		}
	}
	s.finish()
	if !s.stopping {
		// The program waits for good (the run failed, or hung): it cannot
		// go on, so the process ends with the failure.
		s.report(os.Stderr)
		os.Exit(1)
	}
	close(s.done)
}

func (s *Session) finish() {
	w, res := s.w, s.res
	res.Hash, res.Events, res.SimTime, res.Wall = w.log.Hash(), w.log.lines, since(w.now), time.Since(s.start)
	res.Failure, res.Tail, res.Stats = w.failure, w.log.tail(), w.stats()
	w.shutdown()
}

// Stop ends the session (on the program's thread): the faults heal, the
// driver ends and the checkers run; it returns the run's result.
func (s *Session) Stop() *Result {
	if s.stopping {
		<-s.done
		return s.res
	}
	s.stopping = true
	s.w.driver.rt.SimKill() // no call of the program's reaches the cluster now
	s.driver.state = threadDone
	s.w.yield <- struct{}{} // the loop takes over
	<-s.done
	return s.res
}

// report prints the run's verdict and how to replay it.
func (s *Session) report(out io.Writer) {
	r := s.res
	fmt.Fprintln(out, "atoll simulation:", r)
	if r.Failure != nil {
		for _, l := range r.Tail[max(0, len(r.Tail)-20):] {
			fmt.Fprintln(out, "  "+l)
		}
		fmt.Fprintf(out, "replay: run the program again with sim.Config{Seed: %d, Schedule: sim.MustSchedule(%q)}\n", r.Seed,
			FormatSchedule(r.Schedule))
	}
}

// MustSchedule is ParseSchedule for a schedule in a program's source (a
// replay): it panics on a malformed one.
func MustSchedule(text string) []Fault {
	s, err := ParseSchedule(text)
	if err != nil {
		panic(err)
	}
	return s
}

// StartProgram starts a session for a program's main (atoll.Init with
// WithSimulation): its driver becomes the process's current runtime, so
// SDK calls with any context go to it, and atoll.Shutdown ends the run,
// printing its verdict to cfg.Report (default stderr) and returning the
// failure, if any, as an error.
func StartProgram(cfg Config) error {
	report := cfg.Report
	if report == nil {
		report = os.Stderr
	}
	s, _ := Start(cfg)
	d := s.w.driver.rt
	s.w.onDriverStop = func() error {
		r := s.Stop()
		s.report(report)
		if r.Failure != nil {
			return r.Failure
		}
		return nil
	}
	if err := runtime.InstallSim(d); err != nil {
		s.Stop()
		return err
	}
	return nil
}
