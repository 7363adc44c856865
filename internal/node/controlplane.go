package node

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/partition"
)

// The node's way into its cluster: the control plane (NATS) it starts or
// dials, and the gateway to the other nodes.

// connectControlPlane starts the embedded NATS server (embedded node,
// head) or connects to the cluster's. A head's server keeps its store in
// the GCS directory, an embedded node's in its session directory.
func (n *Node) connectControlPlane() error {
	cfg := &n.cfg
	storeDir := filepath.Join(n.sessionDir, "nats")
	name := "atoll-" + n.id.Short()
	var url string
	switch {
	case cfg.Head && cfg.NATSURL != "":
		url = cfg.NATSURL
	case cfg.Head:
		var err error
		if storeDir, n.gcsLock, err = openGCSDir(cfg.GCSDir); err != nil {
			return err
		}
		n.log.Info("GCS state", "dir", storeDir)
		n.nats, err = natsembed.Start(natsembed.Config{Host: cfg.NodeIP, Port: cfg.Port, StoreDir: storeDir, ServerName: name,
			Authorize:   cluster.Authorizer(n.sec.Secret, cluster.DefaultPrefix, cfg.FaultInjection),
			ConnectUser: cluster.HeadUser, ConnectPassword: n.sec.Secret.NATSPassword(cluster.HeadUser),
			TLS: n.sec.ServerTLS, AuthLog: n.log})
		if err != nil {
			return fmt.Errorf("atoll: embedded NATS on %s:%d: %w", cfg.NodeIP, cfg.Port, err)
		}
		n.clusterAddress = n.nats.Addr().String()
	case cfg.Address != "":
		url = cfg.Address
	default:
		var err error
		if n.nats, err = natsembed.Start(natsembed.Config{Port: natsembed.NoListener, StoreDir: storeDir, ServerName: name}); err != nil {
			return fmt.Errorf("atoll: embedded NATS: %w", err)
		}
	}
	var err error
	if url == "" {
		if n.nc, err = n.nats.Connect(); err != nil {
			return fmt.Errorf("atoll: connect to embedded NATS: %w", err)
		}
		return nil
	}
	// Everything this node sends other nodes goes through its network
	// switch, so that a fault plan can partition it (cluster/partition.go).
	n.partition = partition.New(n.partitionChanged)
	if n.nc, url, err = clusterclient.DialAs(url, name, n.sec, cluster.NodeUser(n.id), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.SetCustomDialer(n.partition), nats.ErrorHandler(n.natsError)); err != nil {
		return err
	}
	if n.clusterAddress == "" {
		n.clusterAddress = strings.TrimPrefix(url, "nats://")
	}
	return nil
}

// natsError logs what the cluster's NATS server reports asynchronously:
// a subject this node's role may not use (cluster.Permissions), a slow
// consumer.
func (n *Node) natsError(_ *nats.Conn, sub *nats.Subscription, err error) {
	subject := ""
	if sub != nil {
		subject = sub.Subject
	}
	n.log.Warn("cluster NATS reported an error", "subscription", subject, "err", err)
}

// newGateway prepares this node's connection to the cluster's other
// nodes (cluster.New; Start follows once the raylet runs).
func (n *Node) newGateway(info *atollpb.NodeInfo) *cluster.Gateway {
	return cluster.New(cluster.Config{
		NodeID: n.id, Conn: n.nc, System: n.system, Raylet: n.system.NewLocalPID("raylet"), Store: n.storePID,
		StoreClient: objectstore.NewClient(n.system.Root, n.storePID, n.arena, ids.NewWorkerID()),
		GCS:         n.gcsClient, NodeIP: n.cfg.NodeIP, TransferPort: n.cfg.TransferPort, GossipPort: n.cfg.GossipPort,
		FailureBudget: n.cfg.FailureTimeout, Node: info, Logger: quiet(n.log), MaxInFlight: max(n.arena.Size()/4, 64<<20),
		Secret: n.sec.Secret, ServerTLS: n.sec.ServerTLS, ClientTLS: n.sec.ClientTLS, Partition: n.partition, Faults: n.hooks.Faults,
		OnTransfer: n.activity.transferred,
	})
}
