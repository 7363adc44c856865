package runtime

import (
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// A driver's node that misses the cluster's failure timeout (the process
// paused, starved or partitioned) is declared dead: the other nodes
// forget it, fail the work it forwarded and will never answer it again.
// The driver learns it from its node (node.Node.DeclaredDead): it logs it,
// fails its pending tasks with NodeDiedError, and fails every later
// submission the same way at once, rather than leaving Gets to wait
// forever. Objects already here stay readable; the driver should Shutdown
// and Init again.

// declaredDeadMessage is the NodeDiedError's message.
const declaredDeadMessage = "the cluster declared this driver's node dead (it missed the failure timeout: paused, partitioned or overloaded); its tasks are gone: Shutdown and Init again"

// watchDeclaredDead waits for the driver's node to be declared dead, until
// stop closes.
// A node that fails itself (its raylet failed: node.Node.DeadReason) is
// handled the same way, with that reason.
func (d *Driver) watchDeclaredDead(dead <-chan struct{}, reason func() string, stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case <-dead:
	}
	msg := declaredDeadMessage
	if why := reason(); why != "" {
		msg = "this driver's node cannot go on: " + why + "; its tasks are gone: Shutdown and Init again"
	}
	err := &errs.NodeDiedError{NodeID: d.nodeID.String(), Message: msg}
	d.dead.Store(err)
	d.log.Error("atoll: " + msg)
	d.owner.do(func(t *owner.Table) { t.FailPending(errs.ToProto(err)) })
}

// declaredDead is the error of every submission once the driver's node was
// declared dead, else nil.
func (rt *Runtime) declaredDead() error {
	if e := rt.dead.Load(); e != nil {
		return e
	}
	return nil
}
