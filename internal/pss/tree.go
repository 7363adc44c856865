package pss

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Tree returns root followed by all its descendants (children, their
// children, ...), found by reading the parent pid of every process in
// /proc. The list is a snapshot: processes may start or exit right after.
// It fails with an error matching os.ErrNotExist when root does not exist.
func Tree(root int) ([]int, error) {
	if _, err := os.Stat(fmt.Sprintf("%s/%d", procRoot, root)); err != nil {
		return nil, fmt.Errorf("pss: %w", err)
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("pss: %w", err)
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process directory
		}
		ppid, err := readPPID(pid)
		if err != nil {
			continue // exited while we were walking
		}
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out, nil
}

// readPPID returns the parent pid from /proc/PID/stat. The command name
// (field 2) is in parentheses and may contain spaces and parentheses, so
// the fields are counted from the last ')'.
func readPPID(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return 0, err
	}
	return parsePPID(data)
}

func parsePPID(stat []byte) (int, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("pss: malformed stat %q", stat)
	}
	// After ") " come: state, ppid, ...
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 2 {
		return 0, fmt.Errorf("pss: malformed stat %q", stat)
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, fmt.Errorf("pss: malformed stat %q: %w", stat, err)
	}
	return ppid, nil
}
