package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/node"
)

func newTimelineCmd() *cobra.Command {
	var q clusterQuery
	var output string
	cmd := &cobra.Command{
		Use:   "timeline [--address HOST:PORT] [-o FILE]",
		Short: "Write the cluster's recent task attempts as a Chrome trace",
		Long: `Collects the task attempts every live node of the cluster at --address
(default $` + node.EnvAddress + `, then the address the local head recorded) finished
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
			events, err := node.GetTimeline(ctx, address, node.Credentials{})
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
func writeChromeTrace(w io.Writer, events []node.TimelineEvent) error {
	pids, tids := map[string]int{}, map[string]int{}
	var out []chromeEvent
	for _, e := range events {
		pid, ok := pids[e.NodeID]
		if !ok {
			pid = len(pids) + 1
			pids[e.NodeID] = pid
			out = append(out, chromeEvent{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": "node " + shortID(e.NodeID)}})
		}
		tid, ok := tids[e.WorkerID]
		if !ok {
			tid = len(tids) + 1
			tids[e.WorkerID] = tid
			out = append(out, chromeEvent{Name: "thread_name", Ph: "M", PID: pid, TID: tid, Args: map[string]any{"name": "worker " + shortID(e.WorkerID)}})
		}
		cat := "task"
		if e.Failed {
			cat = "task,failed"
		}
		out = append(out, chromeEvent{Name: e.Name, Cat: cat, Ph: "X", TS: e.Start.UnixMicro(), Dur: max(e.End.Sub(e.Start).Microseconds(), 1),
			PID: pid, TID: tid, Args: map[string]any{"task_id": e.TaskID, "failed": e.Failed}})
	}
	if out == nil {
		out = []chromeEvent{}
	}
	return json.NewEncoder(w).Encode(map[string]any{"traceEvents": out, "displayTimeUnit": "ms"})
}
