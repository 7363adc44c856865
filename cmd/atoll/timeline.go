package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

func newTimelineCmd() *cobra.Command {
	var q clusterQuery
	var output string
	cmd := &cobra.Command{
		Use:   "timeline [--address HOST:PORT] [-o FILE]",
		Short: "Write the cluster's recent task attempts as a Chrome trace",
		Long: `Collects the task attempts every live node of the cluster at --address
(default $` + nodeconfig.EnvAddress + `, then the address the local head recorded) finished
recently (the last 4096 per node) and writes them in the Chrome trace event
format: one process per node, one thread per worker, one slice per attempt.
Open the file in chrome://tracing or https://ui.perfetto.dev. For the full
picture, with actor calls and nested spans, export the OpenTelemetry traces
(OTEL_EXPORTER_OTLP_ENDPOINT).`,
		Args:                  args(0),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			events, err := clusterclient.GetTimeline(ctx, address, nodeconfig.Credentials{})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			if err := writeChromeTrace(w, events); err != nil {
				return err
			}
			if output != "" && output != "-" {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d task attempts to %s\n", len(events), output)
			}
			return nil
		},
	}
	q.addFlag(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the trace to `FILE` (default standard output)")
	return cmd
}

// chromeEvent is one entry of the Chrome trace event format.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   int64          `json:"ts"`
	Dur  int64          `json:"dur,omitempty"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// writeChromeTrace writes events as {"traceEvents": [...]}: each node a
// process, each worker a thread (both named by metadata events).
func writeChromeTrace(w io.Writer, events []clusterclient.TimelineEvent) error {
	pids, tids := map[string]int{}, map[string]int{}
	var out []chromeEvent
	for _, e := range events {
		pid, ok := pids[e.NodeID]
		if !ok {
			pid = len(pids) + 1
			pids[e.NodeID] = pid
			out = append(out, chromeEvent{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": "node " + shortID(e.NodeID)}})
		}
		// A worker's events are a thread; a node's transfers, and its
		// spills and restores, one thread each.
		thread, threadName := e.WorkerID, "worker "+shortID(e.WorkerID)
		switch e.Kind {
		case raylet.EventTransfer:
			thread, threadName = e.NodeID+"/transfers", "transfers"
		case raylet.EventSpill, raylet.EventRestore:
			thread, threadName = e.NodeID+"/spilling", "spills and restores"
		}
		tid, ok := tids[thread]
		if !ok {
			tid = len(tids) + 1
			tids[thread] = tid
			out = append(out, chromeEvent{Name: "thread_name", Ph: "M", PID: pid, TID: tid, Args: map[string]any{"name": threadName}})
		}
		cat := e.Kind
		if cat == "" {
			cat = raylet.EventTask
		}
		if e.Failed {
			cat += ",failed"
		}
		args := map[string]any{"failed": e.Failed}
		if e.Kind == raylet.EventTask || e.Kind == raylet.EventActorCall || e.Kind == raylet.EventActorCreation || e.Kind == "" {
			args["task_id"] = e.TaskID
		}
		if e.Bytes > 0 {
			args["bytes"] = e.Bytes
		}
		if e.Detail != "" {
			args["detail"] = e.Detail
		}
		out = append(out, chromeEvent{Name: e.Name, Cat: cat, Ph: "X", TS: e.Start.UnixMicro(), Dur: max(e.End.Sub(e.Start).Microseconds(), 1),
			PID: pid, TID: tid, Args: args})
	}
	if out == nil {
		out = []chromeEvent{}
	}
	return json.NewEncoder(w).Encode(map[string]any{"traceEvents": out, "displayTimeUnit": "ms"})
}
