package runtime

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/specpack"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// workerLink reaches the raylet over the worker's connection
// (workerproto.Client).
type workerLink struct{ workerproto.Client }

func (l *workerLink) submitTask(spec *atollpb.TaskSpec)           { l.SubmitTask(spec) }
func (l *workerLink) submitPacked(p *specpack.Spec)               { l.SubmitTask(p.Unpack()) }
func (l *workerLink) cancelTask(id ids.TaskID, nonRecursive bool) { l.CancelTask(id, nonRecursive) }
func (l *workerLink) setBlocked(id ids.TaskID, blocked bool)      { l.SetBlocked(id, blocked) }
func (l *workerLink) callActor(address string, spec *atollpb.TaskSpec) {
	l.CallActor(address, spec)
}
func (l *workerLink) sendBorrows(m *atollpb.BorrowReport)  { l.SendBorrows(m) }
func (l *workerLink) killActor(m *atollpb.KillActor)       { l.KillActor(m) }
func (l *workerLink) killWorker(m *atollpb.KillWorker)     { l.KillWorker(m) }
func (l *workerLink) generatorAck(m *atollpb.GeneratorAck) { l.GeneratorAck(m) }
func (l *workerLink) fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	return l.Fetch(ctx, refs)
}

// frameGCS asks the GCS through the raylet.
type frameGCS struct{ client workerproto.Client }

func (g *frameGCS) do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	return g.client.GCS(ctx, req)
}

// Do sends any request through the raylet, whose GCS client routes it.
func (g *frameGCS) Do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	return g.client.GCS(ctx, req)
}

func (g *frameGCS) RegisterActor(ctx context.Context, info *atollpb.ActorInfo) error {
	_, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterActor{RegisterActor: info}})
	return err
}

func (g *frameGCS) GetNamedActor(ctx context.Context, namespace, name string) (*atollpb.ActorInfo, error) {
	r, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetNamedActor{GetNamedActor: &atollpb.GetNamedActor{Name: name, Namespace: namespace}}})
	if err != nil {
		return nil, err
	}
	if len(r.Actors) == 0 {
		return nil, errs.NotFoundf("no actor named %q in namespace %q", name, namespace)
	}
	return r.Actors[0], nil
}

// GetActor asks the GCS for an actor by id through the raylet.
func (g *frameGCS) GetActor(ctx context.Context, actorID []byte) (*atollpb.ActorInfo, error) {
	r, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetActor{GetActor: actorID}})
	if err != nil {
		return nil, err
	}
	if len(r.Actors) == 0 {
		return nil, errs.NotFoundf("no actor %x", actorID)
	}
	return r.Actors[0], nil
}
