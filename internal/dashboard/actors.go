package dashboard

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Bounds of /api/actors.
const (
	defaultActors = 1000
	maxActors     = 10000
)

// actorsView is /api/actors: counts by state and the actors, live ones
// first.
type actorsView struct {
	Counts    map[string]int `json:"counts"`
	Total     int            `json:"total"`
	Truncated bool           `json:"truncated"`
	Actors    []actorView    `json:"actors"`
}

type actorView struct {
	ActorID     string     `json:"actor_id"`
	Name        string     `json:"name,omitempty"`
	Namespace   string     `json:"namespace,omitempty"`
	Class       string     `json:"class"`
	State       string     `json:"state"` // pending, alive, restarting, dead
	NumRestarts int32      `json:"num_restarts"`
	MaxRestarts int32      `json:"max_restarts"`
	NodeID      string     `json:"node_id,omitempty"`
	JobID       string     `json:"job_id,omitempty"`
	DeathCause  *deathView `json:"death_cause,omitempty"`
}

type deathView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// actorState names an actor state as the page shows it.
func actorState(s atollpb.ActorState) string {
	switch s {
	case atollpb.ActorState_ACTOR_PENDING_CREATION:
		return "pending"
	case atollpb.ActorState_ACTOR_ALIVE:
		return "alive"
	case atollpb.ActorState_ACTOR_RESTARTING:
		return "restarting"
	case atollpb.ActorState_ACTOR_DEAD:
		return "dead"
	}
	return "unknown"
}

func stateRank(s string) int {
	return slices.Index([]string{"alive", "restarting", "pending", "dead"}, s)
}

func (a *api) actors(ctx context.Context, r *http.Request) (any, error) {
	limit, err := limitParam(r, "limit", defaultActors, maxActors)
	if err != nil {
		return nil, err
	}
	want := r.URL.Query().Get("state")
	if want != "" && stateRank(want) < 0 {
		return nil, errs.Invalidf("state=%q: want alive, restarting, pending or dead", truncate(want, 32))
	}
	job, err := idParam(r, "job")
	if err != nil {
		return nil, err
	}
	infos, err := a.src.Actors(ctx)
	if err != nil {
		return nil, err
	}
	v := actorsView{Counts: map[string]int{}, Actors: []actorView{}}
	var all []actorView
	for _, info := range infos {
		id, err := ids.FromBytes(info.GetActorId())
		if err != nil {
			continue // the GCS validates actor ids; never seen
		}
		av := actorView{ActorID: id.String(), Name: info.GetName(), Namespace: info.GetNamespace(), Class: info.GetActorType(),
			State: actorState(info.GetState()), NumRestarts: info.GetNumRestarts(), MaxRestarts: info.GetMaxRestarts()}
		if n, err := ids.FromBytes(info.GetNodeId()); err == nil {
			av.NodeID = idString(n)
		}
		jid, err := ids.FromBytes(info.GetJobId())
		if err == nil {
			av.JobID = idString(jid)
		}
		if !job.IsZero() && jid != job {
			continue
		}
		if c := info.GetDeathCause(); c != nil && (c.GetMessage() != "" || c.GetCode() != atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED) {
			av.DeathCause = &deathView{Code: strings.ToLower(c.GetCode().String()), Message: strings.TrimPrefix(c.GetMessage(), "atoll: ")}
		}
		v.Counts[av.State]++
		if want == "" || av.State == want {
			all = append(all, av)
		}
	}
	slices.SortStableFunc(all, func(x, y actorView) int {
		if d := stateRank(x.State) - stateRank(y.State); d != 0 {
			return d
		}
		return strings.Compare(x.Class+x.Name+x.ActorID, y.Class+y.Name+y.ActorID)
	})
	v.Total = len(all)
	if len(all) > limit {
		all, v.Truncated = all[:limit], true
	}
	v.Actors = append(v.Actors, all...)
	return v, nil
}
