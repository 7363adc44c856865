package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// killGrace bounds the wait for processes to exit after SIGKILL.
const killGrace = 5 * time.Second

func newStopCmd() *cobra.Command {
	var force, keep bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop [--force] [--timeout 10s]",
		Short: "Stop every atoll node started on this machine",
		Long: `Stops every atoll node 'atoll start' started on this machine (as recorded
in $TMPDIR/atoll-<uid>/nodes): other nodes first, then heads. Each gets SIGTERM
(SIGKILL with --force) and, if it has not exited within --timeout, SIGKILL.
Once no node runs on this machine, the binaries of the jobs they ran are
removed (--keep-files keeps them); the nodes' logs stay in $TMPDIR/atoll-<uid>/logs.`,
		Args:                  args(0),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return errs.Invalidf("--timeout %v: want a positive duration, e.g. 10s", timeout)
			}
			n, err := stopNodes(cmd.Context(), cmd.ErrOrStderr(), force, timeout)
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %d atoll node(s)\n", n)
			if err != nil || keep {
				return err
			}
			return removeJobBinaries(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "kill the nodes (SIGKILL) instead of stopping them gracefully")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "time a node gets to stop before it is killed")
	cmd.Flags().BoolVar(&keep, "keep-files", false, "keep the binaries of the jobs the nodes ran")
	return cmd
}

// removeJobBinaries removes the binaries of submitted jobs once no
// recorded node runs on this machine, and says how much it freed.
func removeJobBinaries(out, warn io.Writer) error {
	recs, err := readRecords(warn)
	if err != nil {
		return err
	}
	for _, e := range recs {
		if isNodeProcess(e.rec.PID) {
			fmt.Fprintf(warn, "keeping the job binaries in %s: node pid %d still runs\n", jobs.BinariesDir(), e.rec.PID)
			return nil
		}
	}
	freed, err := jobs.RemoveBinaries()
	if err != nil {
		return err
	}
	if freed > 0 {
		fmt.Fprintf(out, "removed %s of job binaries\n", humanBytes(uint64(freed)))
	}
	return nil
}

// recordEntry is a record file and what it holds.
type recordEntry struct {
	path string
	rec  nodeRecord
}

// stopNodes stops the recorded nodes and returns how many it stopped;
// records of nodes that are gone are removed. Warnings go to warn.
func stopNodes(ctx context.Context, warn io.Writer, force bool, timeout time.Duration) (int, error) {
	recs, err := readRecords(warn)
	if err != nil {
		return 0, err
	}
	var others, heads []recordEntry
	for _, e := range recs {
		switch {
		case e.rec.PID == os.Getpid():
			fmt.Fprintf(warn, "skipping %s: it is this process\n", e.path)
		case !isNodeProcess(e.rec.PID):
			removeRecord(e) // stale: the node is gone (or its pid reused)
		case e.rec.Head:
			heads = append(heads, e)
		default:
			others = append(others, e)
		}
	}
	stopped := 0
	var errList []error
	for _, group := range [][]recordEntry{others, heads} {
		n, err := stopGroup(ctx, group, force, timeout)
		stopped += n
		if err != nil {
			errList = append(errList, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return stopped, errors.Join(errList...)
}

// readRecords reads every record file; unreadable ones are reported and
// removed.
func readRecords(warn io.Writer) ([]recordEntry, error) {
	entries, err := os.ReadDir(nodesDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []recordEntry
	for _, de := range entries {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(nodesDir(), name)
		pid, err := strconv.Atoi(strings.TrimSuffix(name, ".json"))
		var rec nodeRecord
		if err == nil {
			var data []byte
			if data, err = os.ReadFile(path); err == nil {
				err = json.Unmarshal(data, &rec)
			}
		}
		if errors.Is(err, os.ErrNotExist) {
			continue // the node removed it meanwhile
		}
		if err == nil && rec.PID != pid {
			err = fmt.Errorf("records pid %d", rec.PID)
		}
		if err != nil {
			fmt.Fprintf(warn, "removing bad node record %s: %v\n", path, err)
			_ = os.Remove(path)
			continue
		}
		recs = append(recs, recordEntry{path: path, rec: rec})
	}
	return recs, nil
}

// stopGroup signals the nodes, waits until they have exited (killing those
// still running after timeout) and removes their records.
func stopGroup(ctx context.Context, group []recordEntry, force bool, timeout time.Duration) (int, error) {
	if len(group) == 0 {
		return 0, nil
	}
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	var errList []error
	running := map[int]recordEntry{}
	for _, e := range group {
		if err := syscall.Kill(e.rec.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errList = append(errList, fmt.Errorf("signal atoll node %s (pid %d): %w", e.rec.NodeID, e.rec.PID, err))
			continue
		}
		running[e.rec.PID] = e
	}
	stopped := 0
	reap := func() {
		for pid, e := range running {
			if !processAlive(pid) {
				removeRecord(e)
				delete(running, pid)
				stopped++
			}
		}
	}
	waitGone := func(d time.Duration) {
		deadline := time.NewTimer(d)
		defer deadline.Stop()
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
		for reap(); len(running) > 0; reap() {
			select {
			case <-tick.C:
			case <-deadline.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}
	waitGone(timeout)
	if len(running) > 0 && ctx.Err() == nil && !force {
		for pid := range running {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(killGrace)
	}
	if err := ctx.Err(); err != nil {
		errList = append(errList, err)
	} else {
		for pid, e := range running {
			errList = append(errList, fmt.Errorf("atoll node %s (pid %d) did not exit", e.rec.NodeID, pid))
		}
	}
	return stopped, errors.Join(errList...)
}

// removeRecord removes a stopped node's record and, for a head, the
// cluster address file if it still holds the head's address.
func removeRecord(e recordEntry) {
	_ = os.Remove(e.path)
	if e.rec.Head && e.rec.Address != "" {
		if cur, err := os.ReadFile(nodeconfig.AddressFile()); err == nil && strings.TrimSpace(string(cur)) == displayAddress(e.rec.Address) {
			_ = os.Remove(nodeconfig.AddressFile())
		}
	}
}

// processAlive reports whether the process pid exists and is not a
// zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc: trust kill
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// isNodeProcess reports whether pid is alive and, where /proc tells, runs
// a node (its arguments have --block), so a pid reused by another program
// after a node died is left alone.
func isNodeProcess(pid int) bool {
	if pid <= 0 || !processAlive(pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		if string(arg) == "--block" || bytes.HasPrefix(arg, []byte("--block=")) {
			return true
		}
	}
	return false
}
