// Package pss measures the memory of a group of processes as the sum of
// their proportional set sizes (PSS), the figure atoll's benchmarks report
// (see BENCHMARKS.md): PSS charges each shared page to the
// processes that map it in equal parts, so a shared-memory object store
// mapped by the raylet, the driver and every worker is counted once in the
// sum, not once per process as RSS would.
//
// Linux only: it reads /proc/PID/smaps_rollup (Linux 4.14+) and
// /proc/PID/stat.
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
	path := fmt.Sprintf("%s/%d/smaps_rollup", procRoot, pid)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pss: %w", err)
	}
	return parseRollup(data)
}

// parseRollup returns the "Pss:" field of smaps_rollup content, in bytes.
func parseRollup(data []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Pss:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("pss: malformed Pss line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("pss: malformed Pss line %q: %w", sc.Text(), err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("pss: %w", err)
	}
	return 0, ErrNoPss
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
