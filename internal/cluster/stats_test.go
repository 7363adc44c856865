package cluster

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TestStatsAnswersBackToBackRequests: a caller polling a node's stats
// sends its next request as soon as it has an answer, and every one is
// answered: the one-at-a-time slot is freed before the answer goes (a
// request that found it still taken was dropped, and its caller waited
// out its timeout).
func TestStatsAnswersBackToBackRequests(t *testing.T) {
	ns := startNATS(t)
	n := startNode(t, ns, nil)
	req, _ := proto.Marshal(&atollpb.NodeStatsRequest{})
	for i := range 2000 {
		msg, err := n.nc.Request(NodeStatsSubject(n.id), req, 2*time.Second)
		if err != nil {
			t.Fatalf("stats request %d: %v", i, err)
		}
		var st atollpb.NodeStats
		if err := proto.Unmarshal(msg.Data, &st); err != nil {
			t.Fatalf("stats answer %d: %v", i, err)
		}
	}
}
