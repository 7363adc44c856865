package clusterclient

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Status is what `atoll status` shows.
type Status struct {
	Address string       `json:"address"`
	Nodes   []NodeStatus `json:"nodes"`
	// Autoscaler is the autoscaler's status when the head runs one
	// (`atoll up`); GetStatus leaves it nil (AutoscalerStatus fills it).
	Autoscaler *atollpb.AutoscalerStatus `json:"autoscaler,omitempty"`
}

// NodeStatus is one node as the GCS and its latest load report know it.
type NodeStatus struct {
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	IsHead   bool   `json:"is_head"`
	Driver   bool   `json:"driver"` // a driver's node (holds its objects, runs no tasks by default)
	Alive    bool   `json:"alive"`
	// A node no longer alive: whether it left on purpose (stopped,
	// drained, its driver ended) rather than failing, why, and when.
	Left      bool      `json:"left,omitempty"`
	EndReason string    `json:"end_reason,omitempty"`
	EndTime   time.Time `json:"end_time,omitzero"`
	// Reporting: the node's load report arrived (an alive node that does
	// not report may have died unobserved).
	Reporting bool               `json:"reporting"`
	Total     map[string]float64 `json:"total"`
	Available map[string]float64 `json:"available"`
	Queued    int                `json:"queued"`
	Running   int                `json:"running"`
	StoreUsed uint64             `json:"store_used"`
	StoreCap  uint64             `json:"store_capacity"`
	// Pulls counts the objects this node fetched from other nodes, and
	// PulledBytes their bytes.
	Pulls       uint64 `json:"pulls"`
	PulledBytes uint64 `json:"pulled_bytes"`
	// The store's contents and spilling (from the node's last report).
	Objects       uint64 `json:"objects"`
	PinnedBytes   uint64 `json:"pinned_bytes"`
	SpilledBytes  uint64 `json:"spilled_bytes"`       // on disk now
	SpillFiles    uint64 `json:"spill_files"`         // on disk now
	SpilledTotal  uint64 `json:"spilled_bytes_total"` // ever
	RestoredTotal uint64 `json:"restored_bytes_total"`
	// ReadsAfterFree counts the Gets of objects their owner had freed,
	// ever (StoreStats.reads_after_free_total): a bug if not 0.
	ReadsAfterFree uint64 `json:"reads_after_free_total"`
	// Bundles counts the placement-group bundles the node holds;
	// Reserved is what they hold, by resource (Total counts it, and
	// Available does not: reserved is in use). Actors counts the actors
	// it hosts. NodeType is the autoscaler's type of the node ("" for a
	// node started by hand).
	Bundles  int                `json:"bundles,omitempty"`
	Reserved map[string]float64 `json:"reserved,omitempty"`
	Actors   int                `json:"actors,omitempty"`
	NodeType string             `json:"node_type,omitempty"`
}

// foldGroups folds a node's placement-group resources into the plain ones
// (CPU_group_<group> into CPU, ...): what a bundle reserves is part of the
// node's total and in use; it returns the reserved amounts apart.
func foldGroups(total, avail map[string]float64) (t, a, reserved map[string]float64) {
	t, a = map[string]float64{}, map[string]float64{}
	for k, v := range total {
		name, rest, ok := strings.Cut(k, "_group_")
		switch {
		case !ok:
			t[k] += v
		case name != "bundle" && !strings.Contains(rest, "_"): // a group's wildcard name: one per bundle's amount
			t[name] += v
			if reserved == nil {
				reserved = map[string]float64{}
			}
			reserved[name] += v
		}
	}
	for k, v := range avail {
		if !strings.Contains(k, "_group_") {
			a[k] = v
		}
	}
	return t, a, reserved
}

// statusWait bounds how long GetStatus waits for the load report
// of every node the GCS lists alive (they report every 100 ms).
const statusWait = 2 * time.Second

// maxLoads bounds the load reports GetStatus keeps while it waits
// (one per node; anything past it is a flood, not a cluster).
const maxLoads = 1 << 16

// GetStatus connects to the cluster at address ("" or "auto": the
// address file of the local head) with creds (the zero Credentials read
// the environment and this machine's secret file) and reports its nodes: what the GCS
// knows of each, and its latest load report (waited for at most 2 s).
func GetStatus(ctx context.Context, address string, creds nodeconfig.Credentials) (*Status, error) {
	nc, url, err := Dial(address, "atoll-status", creds)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return StatusOn(ctx, nc, url)
}

// StatusOn is GetStatus on an open connection to the
// cluster at url.
func StatusOn(ctx context.Context, nc *nats.Conn, url string) (*Status, error) {
	var mu sync.Mutex
	loads := map[ids.NodeID]*atollpb.NodeLoad{}
	got := make(chan struct{}, 1)
	sub, err := nc.Subscribe(cluster.DefaultPrefix+".load.*", func(m *nats.Msg) {
		var l atollpb.NodeLoad
		if err := proto.Unmarshal(m.Data, &l); err != nil {
			slog.Debug("atoll status: bad load report", "subject", m.Subject, "err", err)
			return
		}
		id, err := ids.FromBytes(l.NodeId)
		if err != nil {
			slog.Debug("atoll status: load report without a node id", "subject", m.Subject, "err", err)
			return
		}
		mu.Lock()
		if _, ok := loads[id]; ok || len(loads) < maxLoads {
			loads[id] = &l
		}
		mu.Unlock()
		select {
		case got <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, errs.Unavailablef("subscribe to load reports: %v", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	nodes, err := gcs.NewClient(nc, gcs.ClientOptions{}).ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	// Wait until every live node reported once, at most statusWait.
	deadline := time.NewTimer(statusWait)
	defer deadline.Stop()
	for {
		mu.Lock()
		missing := 0
		for _, n := range nodes {
			if id, err := ids.FromBytes(n.NodeId); err == nil && n.State == atollpb.NodeState_NODE_ALIVE && loads[id] == nil {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		select {
		case <-got:
			continue
		case <-deadline.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		break
	}
	st := &Status{Address: strings.TrimPrefix(url, "nats://")}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err != nil {
			continue // the GCS validates node ids; never seen
		}
		cn := NodeStatus{NodeID: id.String(), Hostname: n.Hostname, IsHead: n.IsHead, Driver: n.IsDriver,
			Alive: n.State == atollpb.NodeState_NODE_ALIVE, Total: n.Resources, StoreCap: n.ObjectStoreBytes, NodeType: n.NodeType}
		if !cn.Alive {
			cn.Left, cn.EndReason = n.Left, n.EndReason
			if n.EndTimeUnixMs > 0 {
				cn.EndTime = time.UnixMilli(n.EndTimeUnixMs).UTC()
			}
		}
		if l := loads[id]; l != nil && cn.Alive {
			cn.Reporting = true
			cn.Total, cn.Available, cn.Reserved = foldGroups(l.Total, l.Available)
			cn.Bundles, cn.Actors, cn.NodeType = len(l.Bundles), int(l.Actors), l.NodeType
			cn.Queued, cn.Running = int(l.Queued), int(l.Running)
			cn.StoreUsed, cn.StoreCap, cn.Pulls, cn.PulledBytes = l.StoreUsed, l.StoreCapacity, l.Pulls, l.PulledBytes
			if s := l.Store; s != nil {
				cn.Objects, cn.PinnedBytes, cn.SpilledBytes, cn.SpillFiles = s.NumObjects, s.PinnedBytes, s.SpilledBytesCurrent, s.SpillFilesCurrent
				cn.SpilledTotal, cn.RestoredTotal, cn.ReadsAfterFree = s.SpilledBytesTotal, s.RestoredBytesTotal, s.ReadsAfterFreeTotal
			}
		}
		st.Nodes = append(st.Nodes, cn)
	}
	sort.SliceStable(st.Nodes, func(i, j int) bool {
		a, b := st.Nodes[i], st.Nodes[j]
		if a.IsHead != b.IsHead {
			return a.IsHead
		}
		if a.Alive != b.Alive {
			return a.Alive
		}
		return a.NodeID < b.NodeID
	})
	return st, nil
}

// ListNodes returns every node the GCS of the cluster at address knows,
// dead ones included (`atoll list nodes`).
func ListNodes(ctx context.Context, address string, creds nodeconfig.Credentials) ([]*atollpb.NodeInfo, error) {
	return listGCS(ctx, address, creds, (*gcs.Client).ListNodes)
}

// ListActors returns every actor the GCS of the cluster at address knows:
// state, node, restarts, death cause (`atoll list actors`).
func ListActors(ctx context.Context, address string, creds nodeconfig.Credentials) ([]*atollpb.ActorInfo, error) {
	return listGCS(ctx, address, creds, (*gcs.Client).ListActors)
}

// ListJobs returns every job the GCS of the cluster at address knows
// (`atoll list jobs`).
func ListJobs(ctx context.Context, address string, creds nodeconfig.Credentials) ([]*atollpb.JobInfo, error) {
	return listGCS(ctx, address, creds, (*gcs.Client).ListJobs)
}

// ListPlacementGroups returns every placement group the head knows, the
// removed ones it remembers included (`atoll list placement-groups`).
func ListPlacementGroups(ctx context.Context, address string, creds nodeconfig.Credentials) ([]*atollpb.PlacementGroupInfo, error) {
	return listGCS(ctx, address, creds, (*gcs.Client).ListPlacementGroups)
}

func listGCS[T any](ctx context.Context, address string, creds nodeconfig.Credentials, list func(*gcs.Client, context.Context) ([]T, error)) ([]T, error) {
	nc, _, err := Dial(address, "atoll-list", creds)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return list(gcs.NewClient(nc, gcs.ClientOptions{}), ctx)
}
