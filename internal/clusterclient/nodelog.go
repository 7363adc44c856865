package clusterclient

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// NodeLog asks node, over nc, for the end of its log (at most maxBytes;
// the node serves it on cluster.NodeLogSubject: the end of its
// Config.LogFile, for the dashboard).
func NodeLog(ctx context.Context, nc *nats.Conn, node ids.NodeID, maxBytes int) (*atollpb.NodeLog, error) {
	req, _ := proto.Marshal(&atollpb.NodeLogRequest{MaxBytes: uint64(max(maxBytes, 0))})
	msg, err := nc.RequestWithContext(ctx, cluster.NodeLogSubject(node), req)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, errs.NotFoundf("node %s: no such live node", node.String())
		}
		return nil, errs.Unavailablef("node %s did not send its log: %v", node.String(), err)
	}
	var l atollpb.NodeLog
	if err := proto.Unmarshal(msg.Data, &l); err != nil {
		return nil, errs.Unavailablef("node %s sent a malformed log: %v", node.String(), err)
	}
	return &l, nil
}
