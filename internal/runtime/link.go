package runtime

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/specpack"
	"github.com/atoll-runtime/atoll/internal/workerconn"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// nodeLink is how a process's runtime reaches its node: task submission,
// cancellation, actor calls, generator items and acks, borrow reports and
// faults. Results come back to the runtime's owner actor. A driver sends
// actor messages to the raylet in its process (driverLink); a worker
// process sends frames to its raylet (workerLink).
type nodeLink interface {
	submitTask(spec *atollpb.TaskSpec)
	// submitPacked submits a spec its owner packed (owner.Config.Pack).
	submitPacked(p *specpack.Spec)
	cancelTask(id ids.TaskID, nonRecursive bool)
	setBlocked(id ids.TaskID, blocked bool)
	callActor(address string, spec *atollpb.TaskSpec)
	killActor(m *atollpb.KillActor)
	killWorker(m *atollpb.KillWorker)
	// fetch pulls objects held on other nodes into the node's store.
	fetch(ctx context.Context, refs []*atollpb.ObjectRef) error
	// sendBorrows sends a borrower's standalone report to the raylet,
	// which routes it to the owner; it does not wait.
	sendBorrows(m *atollpb.BorrowReport)
	// generatorAck passes an owner's GeneratorAck for an attempt that
	// runs in another process on to it, through the raylet.
	generatorAck(m *atollpb.GeneratorAck)
}

// storeAPI is the object store as a process sees it: zero-copy views into
// its own mapping of the node's arena. objectstore.Client implements it,
// over actor messages in the raylet's process and over frames to the
// raylet in a worker process (objectstore.NewFrameTransport).
type storeAPI interface {
	// CreateOwned and PutOwned name the worker owning the object's
	// references: the store frees it if that worker dies.
	CreateOwned(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID) ([]byte, error)
	Seal(ctx context.Context, id ids.ObjectID) error
	Abort(ctx context.Context, id ids.ObjectID) error
	PutOwned(ctx context.Context, id ids.ObjectID, codec atollpb.Codec, data []byte, owner ids.WorkerID) error
	Get(ctx context.Context, idList []ids.ObjectID, timeout time.Duration) ([]objectstore.Object, error)
	// GetWithPriority orders restores of spilled objects: a Get before a
	// Wait before a task's arguments (objectstore.Priority*).
	GetWithPriority(ctx context.Context, idList []ids.ObjectID, timeout time.Duration, priority int32) ([]objectstore.Object, error)
	Release(idList ...ids.ObjectID)
	Delete(idList ...ids.ObjectID)
	// Revive: freed objects are being rebuilt (objectstore.Client.Revive).
	Revive(idList ...ids.ObjectID)
	// DeleteStrays: node's copies of objects that live on elsewhere go
	// (objectstore.Client.DeleteStrays).
	DeleteStrays(node ids.NodeID, idList ...ids.ObjectID)
	Stats(ctx context.Context) (*atollpb.StoreStats, error)
}

var _ storeAPI = (*objectstore.Client)(nil)

// gcsAPI is the part of the GCS a runtime uses.
type gcsAPI interface {
	RegisterActor(ctx context.Context, info *atollpb.ActorInfo) error
	GetNamedActor(ctx context.Context, namespace, name string) (*atollpb.ActorInfo, error)
	GetActor(ctx context.Context, actorID []byte) (*atollpb.ActorInfo, error)
	// Do sends any request (placement groups, resource requests): the
	// client routes it by its op.
	Do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error)
}

// driverLink reaches the raylet in the same process through its mailbox,
// with the owner actor as sender so results come back to it. Leasable
// tasks (raylet.Leasable) go to its submitter instead, if it has one:
// straight to the workers the raylet leases to it.
type driverLink struct {
	system *actor.ActorSystem
	raylet *actor.PID
	owner  *actor.PID
	node   ids.NodeID
	// gateway connects the node to a cluster (nil: a single node).
	gateway *cluster.Gateway
	// sub submits leasable tasks (nil: every task goes to the raylet).
	sub *raylet.Submitter
	// hosts takes calls of actors hosted in this process straight to
	// their workers' connections (nil: through the hosts' mailboxes).
	hosts *workerproto.Hosts
	// lone is this driver's claim on a paused worker connection: the
	// last task or actor call written alone to an idle worker, whose
	// result a Get reads on its own goroutine (nil: none is claimed).
	lone *workerconn.Lone
}

// loneOf returns the driver's claim on a paused connection (nil: none,
// a worker process or a simulator).
func (rt *Runtime) loneOf() *workerconn.Lone {
	if dl, ok := rt.link.(*driverLink); ok && rt.sim == nil {
		return dl.lone
	}
	return nil
}

// wakeLone has the reader of a connection to which this driver wrote a
// lone task or call without waking it (workerconn.Lone) read again: the
// driver goes on to something other than a Get of its result.
func (rt *Runtime) wakeLone() {
	if l := rt.loneOf(); l != nil {
		l.Wake()
	}
}

func (l *driverLink) submitTask(spec *atollpb.TaskSpec) {
	if l.sub != nil && l.sub.Submit(spec) {
		return
	}
	l.system.Root.RequestWithCustomSender(l.raylet, &atollpb.SubmitTask{Spec: spec}, l.owner)
}

func (l *driverLink) submitPacked(p *specpack.Spec) {
	if l.sub != nil && l.sub.SubmitPacked(p) {
		return
	}
	l.submitTask(p.Unpack())
}

func (l *driverLink) cancelTask(id ids.TaskID, nonRecursive bool) {
	if l.sub != nil && l.sub.Cancel(id, nonRecursive) {
		return
	}
	l.system.Root.Send(l.raylet, &atollpb.CancelTask{TaskId: id.Bytes(), NonRecursive: nonRecursive})
}

func (l *driverLink) setBlocked(id ids.TaskID, blocked bool) {
	if blocked {
		l.system.Root.Send(l.raylet, &atollpb.WorkerBlocked{TaskId: id.Bytes()})
	} else {
		l.system.Root.Send(l.raylet, &atollpb.WorkerUnblocked{TaskId: id.Bytes()})
	}
}

func (l *driverLink) callActor(address string, spec *atollpb.TaskSpec) {
	node, local := raylet.SplitActorAddress(address)
	if l.gateway != nil && !node.IsZero() && node != l.node {
		l.gateway.CallActor(node, local, spec, l.owner)
		return
	}
	if l.hosts.Call(local, spec, l.owner, l.lone) {
		return
	}
	l.system.Root.RequestWithCustomSender(l.system.NewLocalPID(local), &atollpb.PushTask{Spec: spec}, l.owner)
}

func (l *driverLink) fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	if l.gateway == nil {
		return nil // a single node holds everything
	}
	return l.gateway.Fetch(ctx, refs)
}

func (l *driverLink) sendBorrows(m *atollpb.BorrowReport) { l.system.Root.Send(l.raylet, m) }
func (l *driverLink) killActor(m *atollpb.KillActor)      { l.system.Root.Send(l.raylet, m) }

// killWorker kills the worker m names; a task its submitter pushed is
// named by the worker it went to (the raylet does not know the task).
func (l *driverLink) killWorker(m *atollpb.KillWorker) {
	if l.sub != nil && len(m.TaskId) > 0 {
		if id, err := ids.FromBytes(m.TaskId); err == nil {
			if w, ok := l.sub.WorkerOf(id); ok {
				m = &atollpb.KillWorker{WorkerId: w.Bytes(), Reason: m.Reason}
			}
		}
	}
	l.system.Root.Send(l.raylet, m)
}

func (l *driverLink) generatorAck(m *atollpb.GeneratorAck) { l.system.Root.Send(l.raylet, m) }
