package pss

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Resident is a process's resident set from /proc/PID/status, in bytes:
// RSS counts every page it maps once per process (shared memory
// included), unlike PSS; Peak is its high-water mark since the process
// started or since ResetPeak.
type Resident struct {
	RSS  uint64 // VmRSS
	Peak uint64 // VmHWM
}

// ReadResident returns process pid's resident set. A process that does not
// exist (or has exited) yields an error that matches os.ErrNotExist.
func ReadResident(pid int) (Resident, error) {
	data, err := os.ReadFile(fmt.Sprintf("%s/%d/status", procRoot, pid))
	if err != nil {
		return Resident{}, fmt.Errorf("pss: %w", err)
	}
	return parseResident(data)
}

// parseResident returns the VmRSS and VmHWM lines of status content, in
// bytes; both must be there.
func parseResident(data []byte) (Resident, error) {
	var r Resident
	fields := map[string]*uint64{"VmRSS:": &r.RSS, "VmHWM:": &r.Peak}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), "\t")
		dst, ok := fields[name]
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return Resident{}, fmt.Errorf("pss: malformed %s line %q", strings.TrimSuffix(name, ":"), sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return Resident{}, fmt.Errorf("pss: malformed %s line %q: %w", strings.TrimSuffix(name, ":"), sc.Text(), err)
		}
		*dst = kb * 1024
		seen++
	}
	if err := sc.Err(); err != nil {
		return Resident{}, fmt.Errorf("pss: %w", err)
	}
	if seen != len(fields) {
		return Resident{}, fmt.Errorf("pss: no VmRSS and VmHWM lines in status")
	}
	return r, nil
}

// ResetPeak starts process pid's peak (VmHWM) again from its current RSS
// (proc(5), clear_refs).
func ResetPeak(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("%s/%d/clear_refs", procRoot, pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("pss: reset peak: %w", err)
	}
	return nil
}
