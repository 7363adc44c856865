package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// submitTimeout bounds `atoll job submit` (sending the binary to every
// node included).
const submitTimeout = 10 * time.Minute

// stopWait bounds how long `atoll job stop` waits for the job to end.
const stopWait = 30 * time.Second

func newJobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job submit|list|status|logs|stop",
		Short: "Run a program as a job on the cluster, and list, follow and stop jobs",
		Long: `Jobs are programs (drivers) the cluster runs for you: 'atoll job submit -- BINARY
ARGS' sends BINARY to the cluster's nodes over its NATS connection (in chunks, at
most 512 MiB; nodes on one machine share one copy), and a node (the head, or
--node) runs it with the cluster's address and credentials in its environment,
its output captured to the job's log. The GCS records the job: PENDING, RUNNING,
then SUCCEEDED, FAILED (with its exit code) or STOPPED.`,
		Args: args(1, "a subcommand (submit, list, status, logs or stop)"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return usageError(cmd, a, 0, nil)
		},
	}
	cmd.AddCommand(newJobSubmitCmd(), newJobListCmd(), newJobStatusCmd(), newJobLogsCmd(), newJobStopCmd())
	return cmd
}

// dial connects a command to the cluster the query's address names.
func (q *clusterQuery) dial(name string) (*nats.Conn, error) {
	address := q.address
	if address == "" {
		address = envAddress()
	}
	nc, _, err := clusterclient.Dial(address, name, nodeconfig.Credentials{})
	return nc, err
}

func newJobSubmitCmd() *cobra.Command {
	var q clusterQuery
	var workingDir, onNode string
	var follow bool
	cmd := &cobra.Command{
		Use:   "submit [--working-dir DIR] [--node NODE] [-f] -- BINARY [ARGS...]",
		Short: "Run BINARY on the cluster as a job's driver",
		Long: `Sends BINARY (a program built with atoll, such as samples/quickstart) to every
live node that lacks it and has the head (or --node, a node id prefix) run it with
ARGS, ATOLL_ADDRESS and the cluster's credentials set: the nodes need no copy of
it, and its worker processes run the copy on their node. --working-dir DIR
(at most 64 MiB, files and directories only) is the directory it starts in;
otherwise an empty one. Prints the job's id; -f then follows its output until it
ends and exits with its exit status (1 for a job stopped or killed by a signal).`,
		Args:                  atLeast(1, "BINARY (after --)"),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			sub := jobs.Submission{Binary: a[0], Args: a[1:], Node: onNode}
			if workingDir != "" {
				archive, err := jobs.ArchiveDir(workingDir)
				if err != nil {
					return fmt.Errorf("--working-dir: %w", err)
				}
				sub.WorkingDir = archive
			}
			nc, err := q.dial("atoll-job-submit")
			if err != nil {
				return err
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), submitTimeout)
			defer cancel()
			errOut := cmd.ErrOrStderr()
			id, err := jobs.Submit(ctx, nc, sub, func(s string) { fmt.Fprintln(errOut, s) })
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "job %s submitted\n", id)
			if !follow {
				fmt.Fprintf(out, "follow its output: atoll job logs %s -f\n", id)
				return nil
			}
			return followJob(cmd.Context(), nc, id.String(), out)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().StringVar(&workingDir, "working-dir", "", "the `DIR` the job starts in, sent with it (default an empty directory)")
	cmd.Flags().StringVar(&onNode, "node", "", "the `NODE` (id prefix) that runs the driver (default the head)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the job's output until it ends; exit with its status")
	return cmd
}

// followJob copies a job's log to w until the job ends and returns an
// error if it did not succeed.
func followJob(ctx context.Context, nc *nats.Conn, prefix string, w io.Writer) error {
	j, err := jobs.Get(ctx, nc, prefix)
	if err != nil {
		return err
	}
	where, err := jobs.LogNode(j)
	if err != nil {
		return err
	}
	if err := jobs.FollowLog(ctx, nc, where, atollpb.LogKind_LOG_JOB, j.JobId, 0, true, w); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	// The log is final once the driver exited; its entry follows.
	j, err = waitJobEnd(ctx, nc, prefix, stopWait)
	if err != nil {
		return err
	}
	if j.State != atollpb.JobState_JOB_SUCCEEDED {
		return &jobEndError{
			text: fmt.Sprintf("job %s %s (exit status %d)%s", hexID(j.JobId), jobState(j), j.ExitCode, because(j.Message)),
			code: int(j.ExitCode),
		}
	}
	return nil
}

// jobEndError is a followed job's failure: atoll exits with the job's own
// exit status (1 when it has none in 1..125, e.g. a job stopped by a
// signal), as if the program had run in the shell.
type jobEndError struct {
	text string
	code int
}

func (e *jobEndError) Error() string { return e.text }

// ExitCode returns the status atoll exits with.
func (e *jobEndError) ExitCode() int {
	if e.code < 1 || e.code > 125 {
		return 1
	}
	return e.code
}

func because(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// waitJobEnd polls the job's entry until it is finished.
func waitJobEnd(ctx context.Context, nc *nats.Conn, prefix string, timeout time.Duration) (*atollpb.JobInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		j, err := jobs.Get(ctx, nc, prefix)
		if err == nil && j.Finished {
			return j, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errs.Unavailablef("job %s has not ended after %v", prefix, timeout)
			}
			return nil, err
		case <-tick.C:
		}
	}
}

// jobRow is a job as `atoll job list|status --json` and `atoll list
// jobs --json` print it.
type jobRow struct {
	JobID        string `json:"job_id"`
	Submitted    bool   `json:"submitted"`
	State        string `json:"state"`
	Entrypoint   string `json:"entrypoint"`
	NodeID       string `json:"node_id,omitempty"`
	ExitCode     *int32 `json:"exit_code,omitempty"`
	Message      string `json:"message,omitempty"`
	StartTime    string `json:"start_time,omitempty"`
	EndTime      string `json:"end_time,omitempty"`
	WorkerBinary string `json:"worker_binary,omitempty"`
	SubmissionID string `json:"submission_id,omitempty"`
}

func toJobRow(j *atollpb.JobInfo) jobRow {
	r := jobRow{JobID: hexID(j.JobId), Submitted: j.Submitted, State: jobState(j), Entrypoint: j.Entrypoint,
		NodeID: hexID(j.NodeId), Message: j.Message, StartTime: jsonTime(j.StartTimeUnixMs), EndTime: jsonTime(j.EndTimeUnixMs),
		WorkerBinary: j.WorkerBinary, SubmissionID: hexID(j.SubmissionId)}
	if j.Submitted && j.Finished {
		code := j.ExitCode
		r.ExitCode = &code
	}
	return r
}

// jobState is a job's state as the CLI shows it: a submitted job's
// state, or RUNNING/FINISHED for a driver's own job.
func jobState(j *atollpb.JobInfo) string {
	if j.Submitted {
		return strings.TrimPrefix(j.State.String(), "JOB_")
	}
	if j.Finished {
		return "FINISHED"
	}
	return "RUNNING"
}

// sortJobs orders jobs by start time, then id.
func sortJobs(jobs []*atollpb.JobInfo) {
	slices.SortStableFunc(jobs, func(a, b *atollpb.JobInfo) int {
		if c := cmp.Compare(a.StartTimeUnixMs, b.StartTimeUnixMs); c != 0 {
			return c
		}
		return strings.Compare(hexID(a.JobId), hexID(b.JobId))
	})
}

// printJobs prints jobs as a table or, with asJSON, {"jobs": [...]}.
func printJobs(w io.Writer, jobs []*atollpb.JobInfo, asJSON bool) error {
	sortJobs(jobs)
	if asJSON {
		rows := make([]jobRow, 0, len(jobs))
		for _, j := range jobs {
			rows = append(rows, toJobRow(j))
		}
		return writeJSON(w, map[string]any{"jobs": rows})
	}
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(w, "no jobs")
		return err
	}
	t := newTable("JOB", "STATE", "NODE", "EXIT>", "STARTED", "ENDED", "ENTRYPOINT")
	for _, j := range jobs {
		exit := ""
		if j.Submitted && j.Finished {
			exit = strconv.Itoa(int(j.ExitCode))
		}
		t.add(shortID(hexID(j.JobId)), jobState(j), shortID(hexID(j.NodeId)), exit, when(j.StartTimeUnixMs), when(j.EndTimeUnixMs), j.Entrypoint)
	}
	return t.write(w)
}

func newJobListCmd() *cobra.Command {
	var q clusterQuery
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:                   "list [--all] [--json]",
		Short:                 "List the submitted jobs (with --all, drivers' own jobs too)",
		Args:                  args(0),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel, address := q.begin(cmd)
			defer cancel()
			jobs, err := clusterclient.ListJobs(ctx, address, nodeconfig.Credentials{})
			if err != nil {
				return err
			}
			if !all {
				jobs = slices.DeleteFunc(jobs, func(j *atollpb.JobInfo) bool { return !j.Submitted })
			}
			return printJobs(cmd.OutOrStdout(), jobs, asJSON)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the jobs as one JSON document")
	cmd.Flags().BoolVar(&all, "all", false, "also list drivers' own jobs (every driver run is one)")
	return cmd
}

func newJobStatusCmd() *cobra.Command {
	var q clusterQuery
	var asJSON bool
	cmd := &cobra.Command{
		Use:                   "status JOB [--json]",
		Short:                 "Show a job's state, node, exit status and times",
		Args:                  args(1, "JOB (a job id or its first digits)"),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			nc, err := q.dial("atoll-job-status")
			if err != nil {
				return err
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), statusTimeout)
			defer cancel()
			j, err := jobs.Get(ctx, nc, a[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			r := toJobRow(j)
			if asJSON {
				return writeJSON(out, r)
			}
			t := newTable("FIELD", "VALUE")
			t.add("job", r.JobID)
			t.add("state", r.State)
			t.add("entrypoint", r.Entrypoint)
			t.add("node", r.NodeID)
			if r.ExitCode != nil {
				t.add("exit status", strconv.Itoa(int(*r.ExitCode)))
			}
			t.add("message", r.Message)
			t.add("started", when(j.StartTimeUnixMs))
			t.add("ended", when(j.EndTimeUnixMs))
			if r.SubmissionID != "" {
				t.add("submitted as", r.SubmissionID)
			}
			return t.write(out)
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as one JSON document")
	return cmd
}

func newJobLogsCmd() *cobra.Command {
	var q clusterQuery
	var follow bool
	cmd := &cobra.Command{
		Use:                   "logs JOB [-f]",
		Short:                 "Print a submitted job's output (stdout and stderr of its driver)",
		Args:                  args(1, "JOB (a job id or its first digits)"),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, a []string) error {
			nc, err := q.dial("atoll-job-logs")
			if err != nil {
				return err
			}
			defer nc.Close()
			j, err := jobs.Get(cmd.Context(), nc, a[0])
			if err != nil {
				return err
			}
			where, err := jobs.LogNode(j)
			if err != nil {
				return err
			}
			return jobs.FollowLog(cmd.Context(), nc, where, atollpb.LogKind_LOG_JOB, j.JobId, 0, follow, cmd.OutOrStdout())
		},
	}
	q.addFlag(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what the job writes until it ends (or Ctrl-C)")
	return cmd
}

func newJobStopCmd() *cobra.Command {
	var q clusterQuery
	cmd := &cobra.Command{
		Use:   "stop JOB",
		Short: "Stop a running job (SIGTERM to its driver, SIGKILL 10s later) and wait until it ends",
		Args:  args(1, "JOB (a job id or its first digits)"),
		RunE: func(cmd *cobra.Command, a []string) error {
			nc, err := q.dial("atoll-job-stop")
			if err != nil {
				return err
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), stopWait)
			defer cancel()
			j, err := jobs.Get(ctx, nc, a[0])
			if err != nil {
				return err
			}
			id, err := ids.FromBytes(j.JobId)
			if err != nil {
				return err
			}
			if !j.Submitted {
				return errs.Invalidf("job %s is a driver's own job: stop its driver program instead", id)
			}
			if err := jobs.Stop(ctx, nc, id); err != nil {
				return err
			}
			j, err = waitJobEnd(ctx, nc, id.String(), stopWait)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "job %s %s\n", id, jobState(j))
			return err
		},
	}
	q.addFlag(cmd)
	return cmd
}

// hexID renders an id's bytes as hex ("" for none).
func hexID(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("%x", b)
}
