// Package pss measures the memory of a group of processes as the sum of
// their proportional set sizes (PSS), the figure atoll's benchmarks report
// (see BENCHMARKS.md): PSS charges each shared page to the
// processes that map it in equal parts, so a shared-memory object store
// mapped by the raylet, the driver and every worker is counted once in the
// sum, not once per process as RSS would. ReadRollup also gives one
// process's anonymous memory and its PSS in shared memory, which tell a
// copy from a read of the store in place. ReadResident gives one
// process's RSS and its peak (/proc/PID/status), which ResetPeak starts
// again: what a single process such as a driver reaches.
//
// Linux only: it reads /proc/PID/smaps_rollup (Linux 4.14+) and, through
// prometheus/procfs, every process's /proc/PID/stat. smaps_rollup is
// parsed here rather than by procfs because procfs's rollup has no
// Pss_Shmem, the figure that tells an in-place read of the store from a
// copy.
package pss

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procRoot is where proc(5) is mounted.
const procRoot = "/proc"

// ErrNoPss is returned when smaps_rollup has no Pss line.
var ErrNoPss = errors.New("pss: no Pss line in smaps_rollup")

// Read returns the proportional set size of process pid in bytes. A process
// that does not exist (or has exited) yields an error that matches
// os.ErrNotExist.
func Read(pid int) (uint64, error) {
	r, err := ReadRollup(pid)
	return r.Pss, err
}

// Rollup is a process's memory from smaps_rollup, in bytes.
type Rollup struct {
	Pss      uint64 // proportional set size
	PssShmem uint64 // its part in shared memory (memfd, tmpfs, SysV)
	// Anonymous is the process's resident anonymous memory (its heap and
	// stacks, not shared memory): pages it copied into, not pages it
	// maps from a shared memory object.
	Anonymous uint64
}

// ReadRollup returns the memory of process pid (Linux 5.6+ for
// PssShmem: 0 before). A process that does not exist (or has exited)
// yields an error that matches os.ErrNotExist.
func ReadRollup(pid int) (Rollup, error) {
	path := fmt.Sprintf("%s/%d/smaps_rollup", procRoot, pid)
	data, err := os.ReadFile(path)
	if err != nil {
		return Rollup{}, fmt.Errorf("pss: %w", err)
	}
	return parseRollup(data)
}

// parseRollup returns the fields of smaps_rollup content, in bytes; the
// Pss line must be there.
func parseRollup(data []byte) (Rollup, error) {
	var r Rollup
	seen, err := parseKB(data, map[string]*uint64{"Pss:": &r.Pss, "Pss_Shmem:": &r.PssShmem, "Anonymous:": &r.Anonymous})
	if err != nil {
		return Rollup{}, err
	}
	if !seen["Pss:"] {
		return Rollup{}, ErrNoPss
	}
	return r, nil
}

// parseKB reads the "Name: N kB" lines of a /proc file whose names are in
// fields into them, in bytes, and reports which it saw.
func parseKB(data []byte, fields map[string]*uint64) (map[string]bool, error) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		dst, ok := fields[f[0]]
		if !ok {
			continue
		}
		name := strings.TrimSuffix(f[0], ":")
		if len(f) != 3 || f[2] != "kB" {
			return nil, fmt.Errorf("pss: malformed %s line %q", name, sc.Text())
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("pss: malformed %s line %q: %w", name, sc.Text(), err)
		}
		*dst = kb * 1024
		seen[f[0]] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pss: %w", err)
	}
	return seen, nil
}

// Sum returns the total PSS of pids in bytes. Processes that have exited
// are skipped (they use no memory any more); other errors are returned.
func Sum(pids []int) (uint64, error) {
	var total uint64
	for _, pid := range pids {
		n, err := Read(pid)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
