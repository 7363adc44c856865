package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// A cluster node's NATS connection drops when the head (its NATS server)
// stops, and nats.go reconnects for as long as the node lives. When it
// does, the head may be a new one: every clustered node then registers
// again with the GCS (cluster.Gateway.Reregister), and a head, once every
// live node had the time to come back, marks dead the nodes its GCS still
// lists alive that it has not heard from (cluster.Gateway.ReconcileNodes;
// see cluster/rejoin.go for why that cannot declare a live node dead),
// and keeps doing so every grace for registrations never heard from.

const (
	// minRejoinGrace is the least a head waits before reconciling: live
	// nodes reconnect within a reconnect wait (250 ms) of its NATS server
	// listening, then report every 100 ms.
	minRejoinGrace = 10 * time.Second
	// reregisterTimeout bounds one attempt to register again; a failed
	// attempt is retried, backing off from reregisterBackoff to
	// maxReregisterBackoff, until it succeeds or the node stops.
	reregisterTimeout    = 30 * time.Second
	reregisterBackoff    = time.Second
	maxReregisterBackoff = 30 * time.Second
)

// rejoinGrace is how long a head waits before it reconciles:
// Config.RejoinGrace if set, else three failure timeouts, at least
// minRejoinGrace.
func (n *Node) rejoinGrace() time.Duration {
	if n.cfg.RejoinGrace > 0 {
		return n.cfg.RejoinGrace
	}
	ft := n.cfg.FailureTimeout
	if ft <= 0 {
		ft = 5 * time.Second
	}
	return max(minRejoinGrace, 3*ft)
}

// startRejoin installs the reconnect handler and, on a head, starts the
// reconciliation; stopRejoin ends both. A clustered node only.
func (n *Node) startRejoin() {
	ctx, cancel := context.WithCancel(context.Background())
	n.rejoinCancel = cancel
	kick := make(chan struct{}, 1)
	n.nc.SetReconnectHandler(func(*nats.Conn) {
		select {
		case kick <- struct{}{}:
		default: // one is pending already
		}
	})
	n.rejoinWG.Go(func() { n.reregisterLoop(ctx, kick) })
	if n.cfg.Head {
		n.rejoinWG.Go(func() { n.reconcile(ctx) })
	}
}

func (n *Node) stopRejoin() {
	if n.rejoinCancel == nil {
		return
	}
	n.nc.SetReconnectHandler(nil)
	n.rejoinCancel()
	n.rejoinWG.Wait()
}

// reregisterLoop registers the node again after each reconnection, until
// ctx ends.
func (n *Node) reregisterLoop(ctx context.Context, kick <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		_, err := backoff.Retry(ctx, func() (struct{}, error) {
			c, cancel := context.WithTimeout(ctx, reregisterTimeout)
			defer cancel()
			err := n.gateway.Reregister(c)
			if errors.Is(err, errs.ErrNodeDied) {
				return struct{}{}, backoff.Permanent(err)
			}
			return struct{}{}, err
		}, backoff.WithBackOff(&backoff.ExponentialBackOff{
			InitialInterval: reregisterBackoff, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: maxReregisterBackoff,
		}), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, next time.Duration) {
			n.log.Warn("reconnected to the cluster but could not register again; retrying", slog.Any("err", err), slog.Duration("retry_in", next))
		}))
		switch {
		case err == nil:
			n.log.Info("reconnected to the cluster: registered again with the GCS", slog.String("node", n.id.String()))
		case errors.Is(err, errs.ErrNodeDied):
			n.declareDead("the GCS lists it dead (found on reconnecting)")
		case ctx.Err() != nil:
			return
		}
	}
}

// reconcile notes the nodes the GCS lists alive as the head starts, waits
// out the grace, then marks dead those of them the head has not heard
// from; then it does the same again every grace, for as long as the head
// runs, so that a registration never followed by a load report (a node
// that died at once, or an id registered by a secret holder that runs no
// node) expires instead of staying alive in the GCS forever. A node that
// registers during a round is a candidate only in the next, so every node
// has at least the grace to be heard. Each round also marks dead again
// the dead nodes whose actors the GCS still lists there (their writes
// failed when the node died, and the head that reported it gave up or is
// gone).
func (n *Node) reconcile(ctx context.Context) {
	grace := n.rejoinGrace()
	reason := "did not come back after the head restarted"
	for first := true; ; first = false {
		c, cancel := context.WithTimeout(ctx, reregisterTimeout)
		listed, err := n.gateway.ListedAlive(c)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Warn("could not list the nodes the GCS lists alive; checking them later", slog.Any("err", err))
		}
		t := time.NewTimer(grace)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c, cancel = context.WithTimeout(ctx, reregisterTimeout)
		gone, err := n.gateway.ReconcileNodes(c, listed, reason)
		cancel()
		for _, id := range gone {
			if first {
				n.log.Warn("marked dead a node the GCS listed alive but that did not come back after the head started (it died while the head was down)",
					slog.String("node", id.String()), slog.Duration("grace", grace))
			} else {
				n.log.Warn("marked dead a node registered in the GCS that never sent a load report",
					slog.String("node", id.String()), slog.Duration("grace", grace))
			}
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			n.log.Warn("could not check the nodes the GCS lists alive", slog.Any("err", err))
		case first:
			n.log.Info("checked the nodes the GCS lists alive against those heard from since the head started",
				slog.Int("marked_dead", len(gone)), slog.Duration("grace", grace))
		}
		reason = fmt.Sprintf("registered but never heard from (no load report within %s)", grace)
	}
}
