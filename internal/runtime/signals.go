package runtime

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
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
