package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

func newLogsCmd() *cobra.Command {
	var q clusterQuery
	var follow bool
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs NODE|JOB|WORKER [-f] [--tail BYTES]",
		Short: "Print a node's log, a submitted job's output or a worker process's output",
		Long: `Prints the log of the live node whose id starts with NODE (what the node
process writes: its start, the jobs it ran, its worker processes' output), the
output of the submitted job whose id starts with JOB (as 'atoll job logs'), or
the output of the worker process WORKER (its id, as atoll.CurrentWorkerID,
'atoll list tasks' and 'atoll timeline' give it, or the first digits of the id
of a worker that ran one of the tasks the nodes recorded; a node keeps its last
1024 workers' output, at most 64 MiB each), read from the node over the cluster's NATS connection in chunks of
at most 256 KiB.
-f keeps printing what is written until the job ends (a node's log: until
Ctrl-C); --tail BYTES starts that many bytes before the end. The reader token is
enough.`,
		Args:                  args(1, "NODE, JOB or WORKER (an id, or its first digits)"),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			if tail < 0 {
				return errs.Invalidf("--tail %d: want a number of bytes >= 0", tail)
			}
			nc, err := q.dial("atoll-logs")
			if err != nil {
				return err
			}
			defer nc.Close()
			ctx := cmd.Context()
			offset := int64(0)
			if tail > 0 {
				offset = -tail
			}
			out := cmd.OutOrStdout()
			lctx, cancel := context.WithTimeout(ctx, statusTimeout)
			n, nerr := clusterclient.ResolveNode(lctx, gcs.NewClient(nc, gcs.ClientOptions{}), a[0])
			cancel()
			if nerr == nil {
				return jobs.FollowLog(ctx, nc, n, atollpb.LogKind_LOG_NODE, nil, offset, follow, out)
			}
			if !errors.Is(nerr, errs.ErrNotFound) {
				return nerr
			}
			j, err := jobs.Get(ctx, nc, a[0])
			if errors.Is(err, errs.ErrNotFound) {
				w, werr := ids.FromHex(strings.ToLower(a[0]))
				if werr != nil {
					if w, werr = resolveWorker(ctx, nc, a[0]); werr != nil {
						return werr
					}
				}
				return followWorkerLog(ctx, nc, w, offset, follow, out)
			}
			if err != nil {
				return err
			}
			where, err := jobs.LogNode(j)
			if err != nil {
				return err
			}
			return jobs.FollowLog(ctx, nc, where, atollpb.LogKind_LOG_JOB, j.JobId, offset, follow, out)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is written (until the job ends, or Ctrl-C)")
	cmd.Flags().Int64Var(&tail, "tail", 0, "start `BYTES` before the end (default: from the start)")
	return cmd
}

// followWorkerLog finds the live node that keeps worker's output and
// copies it to w.
func followWorkerLog(ctx context.Context, nc *nats.Conn, worker ids.WorkerID, offset int64, follow bool, w io.Writer) error {
	nodes, err := gcs.NewClient(nc, gcs.ClientOptions{}).ListNodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err != nil || n.State != atollpb.NodeState_NODE_ALIVE || n.IsDriver {
			continue
		}
		_, err = jobs.ReadLog(ctx, nc, id, atollpb.LogKind_LOG_WORKER, worker.Bytes(), 0, 1)
		if errors.Is(err, errs.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		return jobs.FollowLog(ctx, nc, id, atollpb.LogKind_LOG_WORKER, worker.Bytes(), offset, follow, w)
	}
	return errs.NotFoundf("no live node keeps the output of worker %s", worker)
}

// resolveWorker finds the one worker whose id starts with prefix among the
// workers of the task attempts the live nodes recorded.
func resolveWorker(ctx context.Context, nc *nats.Conn, prefix string) (ids.WorkerID, error) {
	evs, err := clusterclient.TimelineOn(ctx, nc)
	if err != nil {
		return ids.WorkerID{}, err
	}
	prefix = strings.ToLower(prefix)
	var found []string
	for _, e := range evs {
		isTask := e.Kind == raylet.EventTask || e.Kind == raylet.EventActorCreation || e.Kind == raylet.EventActorCall
		if isTask && strings.HasPrefix(e.WorkerID, prefix) && !slices.Contains(found, e.WorkerID) {
			found = append(found, e.WorkerID)
		}
	}
	switch len(found) {
	case 0:
		return ids.WorkerID{}, errs.NotFoundf("no live node's, no job's and no recent task's worker's id starts with %s", prefix)
	case 1:
		return ids.FromHex(found[0])
	}
	return ids.WorkerID{}, errs.Invalidf("%s: the ids of %d workers start with it (%s, ...): give more digits", prefix, len(found), strings.Join(found[:2], ", "))
}
