package runtime

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// signalShutdownTimeout bounds the shutdown a signal starts.
const signalShutdownTimeout = 10 * time.Second

// signalHandler shuts a driver down on SIGINT or SIGTERM and then
// re-raises the signal with its default action, so the process ends as it
// would have without atoll, minus what it would have left on disk (see
// atoll.WithoutSignalHandler).
type signalHandler struct {
	sigs   chan os.Signal
	done   chan struct{}
	exited chan struct{}

	mu      sync.Mutex
	stopped bool // stop was called
	fired   bool // a signal came first: the handler shuts down
}

func (d *Driver) handleSignals() *signalHandler {
	h := &signalHandler{sigs: make(chan os.Signal, 1), done: make(chan struct{}), exited: make(chan struct{})}
	signal.Notify(h.sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer close(h.exited)
		defer signal.Stop(h.sigs)
		select {
		case sig := <-h.sigs:
			signalDeath.begin()
			h.mu.Lock()
			stopped := h.stopped
			h.fired = true
			h.mu.Unlock()
			if !stopped { // else a Shutdown is already under way
				d.log.Info("signal: shutting down", slog.String("signal", sig.String()))
				ctx, cancel := context.WithTimeout(context.Background(), signalShutdownTimeout)
				if err := shutdown(ctx, d.Runtime); err != nil {
					d.log.Warn("shutdown on signal", slog.Any("err", err))
				}
				cancel()
			}
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
			// Still here: the signal's disposition was to ignore it (a
			// program started with SIGINT ignored). Calls held by
			// holdForSignal return their errors after all.
			time.Sleep(signalDeathGrace)
			signalDeath.end()
		case <-h.done:
		}
	}()
	return h
}

// stop ends the handler. Shutdown calls it, also the one the handler
// started: it waits for the handler's goroutine only if no signal came
// (that goroutine may be the caller, or wait for the caller's lock).
func (h *signalHandler) stop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped = true
	fired := h.fired
	h.mu.Unlock()
	close(h.done)
	if !fired {
		<-h.exited
	}
}

// signalDeathGrace is how long the handler waits, after re-raising its
// signal, for the process to end before it lets held calls return.
const signalDeathGrace = 2 * time.Second

// signalDeath holds the SDK calls that fail while a signal shuts atoll
// down, so that the process ends by the signal, as it would have without
// atoll, and not by the program's reaction to the errors of its calls (a
// log.Fatal exiting 1 first).
var signalDeath deathWatch

// deathWatch is signalDeath's type.
type deathWatch struct {
	mu      sync.Mutex
	dying   chan struct{} // non-nil while a signal's shutdown runs; closed by end
	dyingAt atomic.Bool   // dying != nil, read without mu
}

// begin marks a signal's shutdown as under way.
func (w *deathWatch) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dying == nil {
		w.dying = make(chan struct{})
		w.dyingAt.Store(true)
	}
}

// end lets the held calls go: the process outlived its signal.
func (w *deathWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dying != nil {
		close(w.dying)
		w.dying = nil
		w.dyingAt.Store(false)
	}
}

// hold blocks a call made outside any task while a signal's shutdown runs
// (the process is about to end by the signal); it returns at once
// otherwise, and when the process outlives the signal.
func (w *deathWatch) hold(ctx context.Context) {
	if !w.dyingAt.Load() || FromContext(ctx) != nil {
		return
	}
	w.mu.Lock()
	dying := w.dying
	w.mu.Unlock()
	if dying != nil {
		<-dying
	}
}
