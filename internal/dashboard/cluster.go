package dashboard

import (
	"context"
	"net/http"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// clusterView is /api/cluster: the overview and the memory view.
type clusterView struct {
	Address string     `json:"address"`
	Time    time.Time  `json:"time"`
	Nodes   []nodeView `json:"nodes"`
	// Totals sum the live, reporting nodes of the cluster: its capacity.
	// Drivers' nodes (a driver's own store, its CPUs if it gave any) are
	// summed apart, in Drivers.
	Totals  totalsView `json:"totals"`
	Drivers totalsView `json:"drivers"`
	// GoneWithin is how long a node stays listed after it left or died
	// (?gone_within=, default Config.GoneNodesShownFor; 0: forever), and
	// NodesNotListed counts the nodes that ended longer ago.
	GoneWithin     string `json:"gone_within"`
	NodesNotListed int    `json:"nodes_not_listed"`
}

// nodeView is one node of the cluster.
type nodeView struct {
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	Role     string `json:"role"`  // head, worker or driver
	State    string `json:"state"` // alive, left (stopped, drained, its driver ended) or dead (failed)
	// EndReason says why a node that left or died ended.
	EndReason string `json:"end_reason,omitempty"`
	// Reporting: its load report arrived (the figures below are its).
	Reporting          bool               `json:"reporting"`
	StartTime          *time.Time         `json:"start_time,omitempty"`
	EndTime            *time.Time         `json:"end_time,omitempty"`
	ResourcesTotal     map[string]float64 `json:"resources_total"`
	ResourcesAvailable map[string]float64 `json:"resources_available"`
	Queued             int                `json:"queued"`
	Running            int                `json:"running"`
	memoryFigures
}

// memoryFigures are a node's object store figures (`atoll memory`).
type memoryFigures struct {
	StoreUsedBytes     uint64 `json:"store_used_bytes"`
	StoreCapacityBytes uint64 `json:"store_capacity_bytes"`
	PinnedBytes        uint64 `json:"pinned_bytes"`
	Objects            uint64 `json:"objects"`
	SpilledBytes       uint64 `json:"spilled_bytes"`
	SpillFiles         uint64 `json:"spill_files"`
	SpilledBytesTotal  uint64 `json:"spilled_bytes_total"`
	RestoredBytesTotal uint64 `json:"restored_bytes_total"`
	Pulls              uint64 `json:"pulls"`
	PulledBytes        uint64 `json:"pulled_bytes"`
}

func (m *memoryFigures) add(o memoryFigures) {
	m.StoreUsedBytes += o.StoreUsedBytes
	m.StoreCapacityBytes += o.StoreCapacityBytes
	m.PinnedBytes += o.PinnedBytes
	m.Objects += o.Objects
	m.SpilledBytes += o.SpilledBytes
	m.SpillFiles += o.SpillFiles
	m.SpilledBytesTotal += o.SpilledBytesTotal
	m.RestoredBytesTotal += o.RestoredBytesTotal
	m.Pulls += o.Pulls
	m.PulledBytes += o.PulledBytes
}

// totalsView sums the live nodes.
type totalsView struct {
	NodesAlive         int                `json:"nodes_alive"`
	NodesLeft          int                `json:"nodes_left"`
	NodesDead          int                `json:"nodes_dead"`
	ResourcesTotal     map[string]float64 `json:"resources_total"`
	ResourcesAvailable map[string]float64 `json:"resources_available"`
	Queued             int                `json:"queued"`
	Running            int                `json:"running"`
	memoryFigures
}

func (a *api) cluster(ctx context.Context, r *http.Request) (any, error) {
	goneWithin := a.goneWithin
	if q := r.URL.Query().Get("gone_within"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 {
			return nil, errs.Invalidf("gone_within %q: want a duration such as 30m (0: every node)", q)
		}
		goneWithin = d
	}
	now := time.Now().UTC()
	var (
		st    *Status
		infos []*atollpb.NodeInfo
	)
	err := both(func() (err error) {
		st, err = a.src.Status(ctx)
		return err
	}, func() (err error) {
		infos, err = a.src.Nodes(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[ids.NodeID]*atollpb.NodeInfo, len(infos))
	for _, n := range infos {
		if id, err := ids.FromBytes(n.GetNodeId()); err == nil {
			byID[id] = n
		}
	}
	v := clusterView{Address: st.Address, Time: now, Nodes: []nodeView{}, GoneWithin: goneWithin.String(),
		Totals:  totalsView{ResourcesTotal: map[string]float64{}, ResourcesAvailable: map[string]float64{}},
		Drivers: totalsView{ResourcesTotal: map[string]float64{}, ResourcesAvailable: map[string]float64{}}}
	for _, n := range st.Nodes {
		nv := nodeView{NodeID: n.NodeID.String(), Hostname: n.Hostname, Role: role(n), State: "dead", Reporting: n.Reporting,
			ResourcesTotal: orEmpty(n.Total), ResourcesAvailable: orEmpty(n.Available), Queued: n.Queued, Running: n.Running,
			memoryFigures: memoryFigures{StoreUsedBytes: n.StoreUsed, StoreCapacityBytes: n.StoreCap, PinnedBytes: n.PinnedBytes,
				Objects: n.Objects, SpilledBytes: n.SpilledBytes, SpillFiles: n.SpillFiles, SpilledBytesTotal: n.SpilledTotal,
				RestoredBytesTotal: n.RestoredTotal, Pulls: n.Pulls, PulledBytes: n.PulledBytes}}
		if info := byID[n.NodeID]; info != nil {
			nv.StartTime, nv.EndTime = timePtr(unixMs(info.GetStartTimeUnixMs())), timePtr(unixMs(info.GetEndTimeUnixMs()))
			if !n.Alive {
				if nv.EndReason = info.GetEndReason(); info.GetLeft() {
					nv.State = "left"
				}
				if nv.EndTime != nil && goneWithin > 0 && now.Sub(*nv.EndTime) > goneWithin {
					v.NodesNotListed++
					continue
				}
			}
		}
		sum := &v.Totals
		if n.Driver {
			sum = &v.Drivers
		}
		switch {
		case n.Alive:
			nv.State = "alive"
			sum.NodesAlive++
		case nv.State == "left":
			sum.NodesLeft++
		default:
			sum.NodesDead++
		}
		if n.Alive && n.Reporting {
			for k, x := range n.Total {
				sum.ResourcesTotal[k] += x
			}
			for k, x := range n.Available {
				sum.ResourcesAvailable[k] += x
			}
			sum.Queued += n.Queued
			sum.Running += n.Running
			sum.add(nv.memoryFigures)
		}
		v.Nodes = append(v.Nodes, nv)
	}
	return v, nil
}

func orEmpty(m map[string]float64) map[string]float64 {
	if m == nil {
		return map[string]float64{}
	}
	return m
}
