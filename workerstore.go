package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// A worker process reaches the object store with the node's own client
// (objectstore.Client) over frames to its raylet
// (objectstore.NewFrameTransport), which forwards them to the store with
// the worker as the client.
var _ storeAPI = (*objectstore.Client)(nil)

func idsBytes(idList []ids.ObjectID) [][]byte {
	out := make([][]byte, len(idList))
	for i, id := range idList {
		out[i] = id.Bytes()
	}
	return out
}

// frameGCS asks the GCS through the raylet.
type frameGCS struct{ conn *workerconn.Conn }

func (g *frameGCS) do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	r, err := rayletCall(ctx, g.conn, &atollpb.Frame{Body: &atollpb.Frame_GcsRequest{GcsRequest: req}})
	if err != nil {
		return nil, err
	}
	reply := r.GetGcsReply()
	if reply.GetError() != nil {
		return nil, errs.FromProto(reply.Error)
	}
	return reply, nil
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
