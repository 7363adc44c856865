package cluster

import (
	"context"
	"crypto/subtle"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
)

// The users of a head's embedded NATS server, one per role. Each
// presents its name and the password the cluster secret derives for it
// (clusterkey.Secret.NATSPassword); the head's server gives it its role's
// subjects (Permissions).
const (
	// HeadUser is the head's own in-process connection: the GCS (with
	// JetStream), the AMM and the head's node. Every subject.
	HeadUser = "head"
	// ClientUser is a command or tool that holds the cluster secret but is
	// not a node (the CLI, test harnesses): it may ask the GCS and the
	// nodes anything a node may, but publishes no load and serves nothing.
	ClientUser = "client"
	// ReaderUser holds only the reader password (`atoll secret
	// reader-token`), not the secret: it may read the GCS, the nodes'
	// stats, objects, timelines, logs and fault logs, the load reports and the
	// GCS's events, and change nothing.
	ReaderUser     = "reader"
	nodeUserPrefix = "node."
)

// NodeUser is the user of node id's connection.
func NodeUser(id ids.NodeID) string { return nodeUserPrefix + id.String() }

// InboxPrefix is the reply subject prefix of user's connection (given to
// nats.CustomInboxPrefix): a user may subscribe to its own replies only,
// so it cannot read the answers the GCS or a node sends anyone else.
func InboxPrefix(user string) string { return "_INBOX." + user }

// Authorizer is the head's embedded NATS server's admission check
// (natsembed.Config.Authorize): a user is admitted with the password
// secret derives for it, and given its role's subjects under prefix.
// faultInjection allows fault injection through NATS (KillNode and
// PartitionNode: the nodes' crash and partition subjects); without it no
// user but the head may publish on them.
func Authorizer(secret clusterkey.Secret, prefix string, faultInjection bool) func(user, password string) (*natsembed.Permissions, bool) {
	return func(user, password string) (*natsembed.Permissions, bool) {
		if user == "" || subtle.ConstantTimeCompare([]byte(password), []byte(secret.NATSPassword(user))) != 1 {
			return nil, false
		}
		return Permissions(prefix, user, faultInjection)
	}
}

// Permissions are user's subjects under prefix (false: no such user).
// The head has every subject (nil); the roles below list theirs, allow
// lists both ways, so a subject atoll adds is closed until it is listed.
//
//	node.<id>  publishes: every node's subjects (work, results, requests),
//	           its own load report, frees, actor kills, owner exits, GCS
//	           and placement-group requests and its own GCS registrations,
//	           AMM and autoscaler requests, jobs' worker output, replies;
//	           subscribes: its own node subjects, loads, frees, kills,
//	           owner exits, GCS events, jobs' worker output, its own inbox
//	client     publishes: what a node may, but no load report and no
//	           registration;
//	           subscribes: loads, GCS events, its own inbox
//	reader     publishes: GCS and placement-group reads, the autoscaler's
//	           status, the nodes' stats, objects, timeline, log, log-read
//	           and fault-log requests; replies to nothing;
//	           subscribes: loads, GCS events, its own inbox
//
// Without faultInjection, the nodes' crash and partition subjects are
// denied to all three.
func Permissions(prefix, user string, faultInjection bool) (*natsembed.Permissions, bool) {
	var faults []string
	if !faultInjection {
		faults = []string{prefix + ".node.*.crash", prefix + ".node.*.partition"}
	}
	requests := []string{
		prefix + ".node.*.*",
		prefix + ".gcs.v1", prefix + ".gcs.v1.read",
		gcs.PlacementSubject(prefix), gcs.PlacementReadSubject(prefix), gcs.AutoscalerSubject(prefix),
		prefix + ".amm.>", prefix + ".autoscaler.status", prefix + ".autoscaler.shutdown",
		freeSubject(prefix), killSubject(prefix), ownersExitedSubject(prefix),
	}
	observe := []string{prefix + ".load.*", prefix + ".events.>", InboxPrefix(user) + ".>"}
	switch {
	case user == HeadUser:
		return nil, true
	case strings.HasPrefix(user, nodeUserPrefix):
		id, err := ids.FromHex(strings.TrimPrefix(user, nodeUserPrefix))
		if err != nil || id.IsZero() {
			return nil, false
		}
		return &natsembed.Permissions{
			Publish: natsembed.SubjectRules{
				Allow: append(requests, loadSubject(prefix, id), gcs.NodeRequestSubject(prefix, id), outputSubjects(prefix), "_INBOX.>"),
				Deny:  faults,
			},
			Subscribe: natsembed.SubjectRules{
				Allow: append(observe, nodeSubject(prefix, id, ">"),
					freeSubject(prefix), killSubject(prefix), ownersExitedSubject(prefix), outputSubjects(prefix)),
			},
		}, true
	case user == ClientUser:
		return &natsembed.Permissions{
			Publish:   natsembed.SubjectRules{Allow: requests, Deny: faults},
			Subscribe: natsembed.SubjectRules{Allow: observe},
		}, true
	case user == ReaderUser:
		return &natsembed.Permissions{
			Publish: natsembed.SubjectRules{Allow: []string{
				prefix + ".gcs.v1.read", gcs.PlacementReadSubject(prefix), prefix + ".autoscaler.status",
				prefix + ".node.*.stats", prefix + ".node.*.objects", prefix + ".node.*.timeline", prefix + ".node.*.faults",
				prefix + ".node.*.logs", prefix + ".node.*.logread",
			}},
			Subscribe: natsembed.SubjectRules{Allow: observe},
		}, true
	}
	return nil, false
}

// faultInjectionAllowed fails with ErrPermissionDenied unless the
// cluster's head allows fault injection between nodes
// (NodeInfo.fault_injection): without it the head's NATS server would
// drop the request silently and the caller would wait out its deadline.
func (g *Gateway) faultInjectionAllowed(ctx context.Context, what string) error {
	if g.cfg.GCS == nil {
		return nil
	}
	nodes, err := g.cfg.GCS.ListNodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.GetIsHead() && n.GetState() == atollpb.NodeState_NODE_ALIVE {
			if n.GetFaultInjection() {
				return nil
			}
			break
		}
	}
	return errs.PermissionDeniedf("%s: the cluster's head does not allow fault injection (start it with --fault-injection, or node.Config.FaultInjection)", what)
}
