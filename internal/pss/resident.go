package pss

import (
	"fmt"
	"os"
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
	seen, err := parseKB(data, map[string]*uint64{"VmRSS:": &r.RSS, "VmHWM:": &r.Peak})
	if err != nil {
		return Resident{}, err
	}
	if !seen["VmRSS:"] || !seen["VmHWM:"] {
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
