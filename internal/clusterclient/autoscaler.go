package clusterclient

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Subjects of the head's autoscaler (internal/autoscaler's StatusSubject
// and ShutdownSubject).
const (
	autoscalerStatusSubject   = "atoll.autoscaler.status"
	autoscalerShutdownSubject = "atoll.autoscaler.shutdown"
)

// ErrNoAutoscaler: the cluster runs no autoscaler (its head has no
// cluster file).
var ErrNoAutoscaler = errs.NotFoundf("the cluster runs no autoscaler (start its head with atoll up or --autoscaler)")

// AutoscalerStatusOn asks the head's autoscaler for its status:
// ErrNoAutoscaler when there is none.
func AutoscalerStatusOn(ctx context.Context, nc *nats.Conn) (*atollpb.AutoscalerStatus, error) {
	b, _ := proto.Marshal(&atollpb.AutoscalerStatusRequest{})
	msg, err := nc.RequestWithContext(ctx, autoscalerStatusSubject, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, ErrNoAutoscaler
	}
	if err != nil {
		return nil, errs.Unavailablef("autoscaler status: %v", err)
	}
	st := &atollpb.AutoscalerStatus{}
	if err := proto.Unmarshal(msg.Data, st); err != nil {
		return nil, errs.Unavailablef("autoscaler status: undecodable reply")
	}
	return st, nil
}

// AutoscalerStatus is AutoscalerStatusOn for the cluster at address.
func AutoscalerStatus(ctx context.Context, address string, creds nodeconfig.Credentials) (*atollpb.AutoscalerStatus, error) {
	nc, _, err := Dial(address, "atoll-status", creds)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return AutoscalerStatusOn(ctx, nc)
}

// ShutdownAutoscaler asks the head's autoscaler to stop scaling and
// terminate every instance it launched (`atoll down`); it returns how
// many it terminated.
func ShutdownAutoscaler(ctx context.Context, nc *nats.Conn) (int, error) {
	req := &atollpb.AutoscalerShutdown{}
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutMs = max(int64(1000), int64(0.8*float64(time.Until(d).Milliseconds())))
	}
	b, _ := proto.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, autoscalerShutdownSubject, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, ErrNoAutoscaler
	}
	if err != nil {
		return 0, errs.Unavailablef("autoscaler shutdown: %v", err)
	}
	reply := &atollpb.AutoscalerShutdownReply{}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return 0, errs.Unavailablef("autoscaler shutdown: undecodable reply")
	}
	if reply.Error != nil {
		return int(reply.Terminated), errs.FromProto(reply.Error)
	}
	return int(reply.Terminated), nil
}
