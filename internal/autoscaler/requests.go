package autoscaler

// The autoscaler's requests over NATS: request_resources (a job's
// explicit demand), status (`atoll status`) and shutdown (`atoll down`),
// and the status it publishes after every round.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// serve answers request_resources, status and shutdown requests.
func (s *shell) serve(r *natsRequest) {
	switch r.kind {
	case "request":
		req := &atollpb.GcsRequest{}
		err := proto.Unmarshal(r.msg.Data, req)
		rr := req.GetRequestResources()
		switch {
		case err != nil || rr == nil:
			err = errs.Invalidf("autoscaler: not a request_resources request")
		case len(rr.Requester) == 0 || len(rr.Requester) > 64:
			err = errs.Invalidf("autoscaler: request_resources: a requester of %d bytes", len(rr.Requester))
		case len(rr.Bundles) > maxBundles:
			err = errs.Invalidf("autoscaler: request_resources of %d bundles, at most %d", len(rr.Bundles), maxBundles)
		case badBundles(rr.Bundles) != "":
			err = errs.Invalidf("autoscaler: request_resources: %s", badBundles(rr.Bundles))
		case len(rr.Bundles) == 0:
			delete(s.requests, string(rr.Requester))
		case s.requests[string(rr.Requester)] == nil && len(s.requests) >= maxRequests:
			err = errs.Exhaustedf("autoscaler: %d jobs hold a request_resources already", len(s.requests))
		default:
			var bundles []raylet.Resources
			for _, b := range rr.Bundles {
				bundles = append(bundles, raylet.Resources(b.GetResources()).Clone())
			}
			s.requests[string(rr.Requester)] = bundles
		}
		reply := &atollpb.GcsReply{}
		if err != nil {
			reply.Error = errs.ToProto(err)
		}
		respond(r.msg, reply)
	case "status":
		respond(r.msg, s.a.Status())
	case "shutdown":
		req := &atollpb.AutoscalerShutdown{}
		if err := proto.Unmarshal(r.msg.Data, req); err != nil || req.TimeoutMs < 0 || req.TimeoutMs > maxShutdownMs {
			respond(r.msg, &atollpb.AutoscalerShutdownReply{Error: errs.ToProto(errs.Invalidf("autoscaler: not a shutdown request (timeout 0 to %d ms)", maxShutdownMs))})
			return
		}
		s.shutdownAll(r.msg, time.Duration(req.TimeoutMs)*time.Millisecond)
	}
}

// badBundles says what is wrong with a request_resources's bundles ("" if
// nothing): a bundle of too many resources, an empty or long name, an
// amount not finite or negative.
func badBundles(bundles []*atollpb.Bundle) string {
	for i, b := range bundles {
		if len(b.GetResources()) > maxBundleResources {
			return fmt.Sprintf("bundle %d has %d resources, at most %d", i, len(b.GetResources()), maxBundleResources)
		}
		for k, v := range b.GetResources() {
			if k == "" || len(k) > maxResourceName || !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Sprintf("bundle %d: %.64q=%g", i, k, v)
			}
		}
	}
	return ""
}

// shutdownAll stops scaling and terminates every instance (`atoll down`),
// answering once they are gone or timeout passed.
func (s *shell) shutdownAll(msg *nats.Msg, timeout time.Duration) {
	if timeout <= 0 {
		timeout = time.Minute
	}
	s.shutdown = true
	var all []string
	for id, in := range s.instances {
		in.State = Terminating
		all = append(all, id)
	}
	slices.Sort(all)
	p, log := s.a.cfg.Provider, s.a.cfg.Logger
	log.Info("autoscaler: shutting down: terminating every instance", "instances", len(all))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errList []error
		for _, id := range all {
			wg.Go(func() {
				if err := p.Terminate(ctx, id); err != nil {
					mu.Lock()
					errList = append(errList, fmt.Errorf("%s: %w", id, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		reply := &atollpb.AutoscalerShutdownReply{Terminated: int32(len(all) - len(errList))}
		if err := errors.Join(errList...); err != nil {
			reply.Error = errs.ToProto(errs.Unavailablef("autoscaler: terminate: %v", err))
		}
		respond(msg, reply)
	}()
}

func respond(m *nats.Msg, reply proto.Message) {
	if m.Reply == "" {
		return
	}
	if b, err := proto.Marshal(reply); err == nil {
		_ = m.Respond(b)
	}
}

// publishStatus makes the status Status returns.
func (s *shell) publishStatus(now time.Time) {
	f := s.a.cfg.File
	st := &atollpb.AutoscalerStatus{Provider: f.Provider.Type, IntervalMs: time.Duration(f.Interval).Milliseconds(),
		IdleTimeoutMs: time.Duration(f.IdleTimeout).Milliseconds(), UpscalingSpeed: f.UpscalingSpeed, Rounds: s.rounds,
		LastError: s.lastErr}
	if !s.lastRound.IsZero() {
		st.LastRoundUnixMs = s.lastRound.UnixMilli()
	}
	counts := map[string][3]int32{}
	for _, in := range s.instances {
		c := counts[in.Type]
		switch in.State {
		case Launching:
			c[0]++
		case Running:
			c[1]++
		case Draining:
			c[2]++
		}
		counts[in.Type] = c
		ai := &atollpb.AutoscalerInstance{InstanceId: in.ID, NodeType: in.Type, State: in.State.String(), SinceUnixMs: in.Since.UnixMilli()}
		if id, err := ids.FromHex(in.NodeID); err == nil {
			ai.NodeId = id.Bytes()
			if n := s.nodes[id]; n != nil && n.why == "" {
				ai.IdleMs = now.Sub(n.busySeen).Milliseconds()
			}
		}
		st.Instances = append(st.Instances, ai)
	}
	slices.SortFunc(st.Instances, func(a, b *atollpb.AutoscalerInstance) int { return strings.Compare(a.InstanceId, b.InstanceId) })
	for _, t := range s.a.policy.Types {
		c := counts[t.Name]
		st.NodeTypes = append(st.NodeTypes, &atollpb.AutoscalerNodeType{Name: t.Name, Resources: t.Resources, MinWorkers: int32(t.Min),
			MaxWorkers: int32(t.Max), Launching: c[0], Running: c[1], Draining: c[2]})
	}
	for _, u := range s.unmet {
		st.Demands = append(st.Demands, &atollpb.AutoscalerDemand{Source: u.Source, Resources: u.Resources, Count: int32(u.Count),
			Infeasible: u.Infeasible, Reason: u.Reason})
	}
	st.Decisions = slices.Clone(s.decisions)
	s.a.mu.Lock()
	s.a.status = st
	s.a.mu.Unlock()
}
