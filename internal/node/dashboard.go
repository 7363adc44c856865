package node

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/dashboard"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// startDashboard serves the dashboard on a head that was asked to.
func (n *Node) startDashboard() error {
	if !n.cfg.Dashboard {
		return nil
	}
	addr := net.JoinHostPort(n.cfg.DashboardHost, strconv.Itoa(n.cfg.DashboardPort))
	var names []string
	for _, name := range strings.Split(n.cfg.DashboardNames, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	token := ""
	if !n.sec.Secret.IsZero() {
		token = n.sec.Secret.NATSPassword(cluster.ReaderUser) // the reader token
	}
	srv, err := dashboard.Start(dashboard.Config{Addr: addr, Source: dashboardSource{n}, TraceURL: n.cfg.DashboardTraceURL,
		Token: token, Hosts: names, Logger: n.log.With("component", "dashboard")})
	if err != nil {
		return fmt.Errorf("%w (another port: --dashboard-port, node.Config.DashboardPort; none: --include-dashboard=false)", err)
	}
	n.dashboard = srv
	n.log.Info("dashboard", "url", srv.URL())
	return nil
}

// DashboardURL is the dashboard's address (http://host:port) on a head
// that serves it, else "".
func (n *Node) DashboardURL() string {
	if n.dashboard == nil {
		return ""
	}
	return n.dashboard.URL()
}

// dashboardSource answers the dashboard with the queries behind the CLI
// (status.go, timeline.go, logs.go) on the head's own connection.
type dashboardSource struct{ n *Node }

func (s dashboardSource) Status(ctx context.Context) (*dashboard.Status, error) {
	st, err := clusterclient.StatusOn(ctx, s.n.nc, s.n.clusterAddress)
	if err != nil {
		return nil, err
	}
	out := &dashboard.Status{Address: st.Address}
	for _, c := range st.Nodes {
		id, err := ids.FromHex(c.NodeID)
		if err != nil {
			continue
		}
		out.Nodes = append(out.Nodes, dashboard.NodeStatus{NodeID: id, Hostname: c.Hostname, IsHead: c.IsHead, Driver: c.Driver,
			Alive: c.Alive, Reporting: c.Reporting, Total: c.Total, Available: c.Available, Queued: c.Queued, Running: c.Running,
			StoreUsed: c.StoreUsed, StoreCap: c.StoreCap, PinnedBytes: c.PinnedBytes, Objects: c.Objects,
			SpilledBytes: c.SpilledBytes, SpillFiles: c.SpillFiles, SpilledTotal: c.SpilledTotal, RestoredTotal: c.RestoredTotal,
			Pulls: c.Pulls, PulledBytes: c.PulledBytes})
	}
	return out, nil
}

func (s dashboardSource) Nodes(ctx context.Context) ([]*atollpb.NodeInfo, error) {
	return s.n.gcsClient.ListNodes(ctx)
}

func (s dashboardSource) Actors(ctx context.Context) ([]*atollpb.ActorInfo, error) {
	return s.n.gcsClient.ListActors(ctx)
}

func (s dashboardSource) PlacementGroups(ctx context.Context) ([]*atollpb.PlacementGroupInfo, error) {
	return s.n.gcsClient.ListPlacementGroups(ctx)
}

func (s dashboardSource) Jobs(ctx context.Context) ([]*atollpb.JobInfo, error) {
	return s.n.gcsClient.ListJobs(ctx)
}

func (s dashboardSource) Timeline(ctx context.Context) ([]dashboard.TaskAttempt, error) {
	evs, err := clusterclient.TimelineOn(ctx, s.n.nc)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.TaskAttempt, 0, len(evs))
	for _, e := range evs {
		if e.Kind != "" && e.Kind != raylet.EventTask {
			continue // actor calls, transfers, spills and restores are not task attempts
		}
		a := dashboard.TaskAttempt{Name: e.Name, TraceID: e.TraceID, Start: e.Start, End: e.End, Failed: e.Failed,
			Error: e.Error, RemoteStack: e.RemoteStack}
		var err1, err2, err3 error
		a.NodeID, err1 = ids.FromHex(e.NodeID)
		a.WorkerID, err2 = ids.FromHex(e.WorkerID)
		a.TaskID, err3 = ids.FromHex(e.TaskID)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if e.JobID != "" {
			a.JobID, _ = ids.FromHex(e.JobID)
		}
		out = append(out, a)
	}
	return out, nil
}

func (s dashboardSource) NodeLog(ctx context.Context, node ids.NodeID, maxBytes int) (*atollpb.NodeLog, error) {
	return clusterclient.NodeLog(ctx, s.n.nc, node, maxBytes)
}

func (s dashboardSource) JobLog(ctx context.Context, job ids.JobID, maxBytes int) (*atollpb.LogChunk, error) {
	all, err := s.n.gcsClient.ListJobs(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(j *atollpb.JobInfo) bool { return string(j.GetJobId()) == string(job.Bytes()) })
	if i < 0 {
		return nil, errs.NotFoundf("no job %s", job)
	}
	node, err := jobs.LogNode(all[i])
	if err != nil {
		return nil, err
	}
	return jobs.ReadLog(ctx, s.n.nc, node, atollpb.LogKind_LOG_JOB, job.Bytes(), -int64(maxBytes), maxBytes)
}
