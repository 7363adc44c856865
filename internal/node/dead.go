package node

import (
	"bytes"
	"log/slog"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/partition"
)

// A cluster node that stops answering for longer than the failure timeout
// (paused with SIGSTOP, partitioned, starved) is declared dead by the
// others: its work is retried elsewhere, the objects it held are lost and
// the gateways forget it for good. If the process then resumes, the
// cluster will never use it again. The node learns it from the GCS's node
// events (the DEAD entry of its own id) and closes DeclaredDead; the node
// processes (RunFromEnv, `atoll start`) stop and exit with an error, as
// Ray's raylet does when the GCS marks it dead.

// watchOwnDeath subscribes to the GCS's node events for the node's own
// death.
func (n *Node) watchOwnDeath() error {
	self := n.id.Bytes()
	unsubscribe, err := n.gcsClient.SubscribeNodeEvents(func(info *atollpb.NodeInfo) {
		if info.State != atollpb.NodeState_NODE_DEAD || !bytes.Equal(info.NodeId, self) {
			return
		}
		n.declareDead("its death was announced")
	})
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.events["own-death"] = unsubscribe
	n.mu.Unlock()
	return nil
}

// declareDead closes DeclaredDead, once, unless the node is stopping (its
// own Stop marks it dead).
func (n *Node) declareDead(how string) {
	n.markDead("", func() {
		n.log.Error("the cluster declared this node dead: it missed the failure timeout (paused, partitioned or overloaded); its work went elsewhere and it will not be used again",
			slog.String("node", n.id.String()), slog.String("how", how))
	})
}

// markDead logs and closes DeclaredDead with why (DeadReason), once,
// unless the node is stopping.
func (n *Node) markDead(why string, log func()) {
	n.mu.Lock()
	stopping := n.stopped
	n.mu.Unlock()
	if stopping {
		return
	}
	n.deadOnce.Do(func() {
		log()
		if why != "" {
			n.deadWhy.Store(&why)
		}
		close(n.dead)
	})
}

// failStop closes DeclaredDead, once, because a part of the node failed
// and cannot go on (its raylet: actors.StopOnFailure): a node process
// exits with status 1 (the cluster declares it dead and retries its work
// elsewhere), a driver fails its pending and later tasks. why says what
// failed (DeadReason).
func (n *Node) failStop(why string) {
	n.markDead(why, func() {
		n.log.Error("this node cannot go on: "+why+"; it stops serving", slog.String("node", n.id.String()))
	})
}

// DeclaredDead is closed when the cluster declared this running node dead
// (see above), or a part of it failed for good (DeadReason says which).
// It never closes when the node's own Stop marks it dead; on an embedded
// node, only for a failure.
func (n *Node) DeclaredDead() <-chan struct{} { return n.dead }

// DeadReason is why DeclaredDead closed for a failure of the node itself
// ("its raylet failed (...)"), or "" when the cluster declared it dead
// (or it has not closed).
func (n *Node) DeadReason() string {
	if why := n.deadWhy.Load(); why != nil {
		return *why
	}
	return ""
}

// Drained is closed when the node, drained (`atoll drain`), was told by
// the head to leave the cluster: every object of its store has a copy on
// another node and its raylet is idle. The node processes stop and exit
// with status 0. It never closes on a node outside a cluster.
func (n *Node) Drained() <-chan struct{} {
	if n.gateway == nil {
		return nil
	}
	return n.gateway.Left()
}

// partitionChanged logs the cuts and heals of the node's network switch
// (a fault plan's partition). When a cut outlasts the failure timeout,
// the heal is followed by the node learning it was declared dead.
func (n *Node) partitionChanged(cut bool, dir partition.Direction, d time.Duration) {
	if cut {
		n.log.Warn("fault plan: this node is cut off from the cluster (NATS, transfers, gossip); it heals by itself",
			slog.String("node", n.id.String()), slog.String("direction", dir.String()), slog.Duration("for", d))
		return
	}
	n.log.Warn("fault plan: this node's partition healed; it reconnects to the cluster",
		slog.String("node", n.id.String()), slog.String("direction", dir.String()))
}
