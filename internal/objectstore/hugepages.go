package objectstore

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// HugePages says whether the arena's shared memory is backed by 2 MiB
// pages. Scans of large objects run faster on them (fewer TLB misses and
// page-table entries; each process that maps an object fills one entry
// per 2 MiB instead of 512). For shared memory the kernel grants them
// only where the administrator allows it: shmem_enabled in
// /sys/kernel/mm/transparent_hugepage (or its hugepages-2048kB
// directory) set to advise, within_size, always or force.
type HugePages int

const (
	// HugePagesAuto (the default) uses huge pages where the system allows
	// them for shared memory, and 4 KiB pages elsewhere.
	HugePagesAuto HugePages = iota
	// HugePagesOn requires them: creating the arena fails, saying how to
	// allow them, where the system does not.
	HugePagesOn
	// HugePagesOff uses 4 KiB pages even where huge pages are allowed.
	HugePagesOff
)

// String returns "auto", "on" or "off".
func (h HugePages) String() string {
	switch h {
	case HugePagesAuto:
		return "auto"
	case HugePagesOn:
		return "on"
	case HugePagesOff:
		return "off"
	}
	return fmt.Sprintf("HugePages(%d)", int(h))
}

// ParseHugePages reads what String writes.
func ParseHugePages(s string) (HugePages, error) {
	for _, h := range []HugePages{HugePagesAuto, HugePagesOn, HugePagesOff} {
		if s == h.String() {
			return h, nil
		}
	}
	return 0, errs.Invalidf("huge pages %q: want auto, on or off", s)
}

// thpDir is where the kernel's transparent huge page settings are (a
// variable for tests).
var thpDir = "/sys/kernel/mm/transparent_hugepage"

// ShmemHugePages reports whether this system backs shared memory (a
// memfd) with huge pages when a mapping asks for them (MADV_HUGEPAGE),
// and the policy that decides it ("advise", "never", ...).
func ShmemHugePages() (allowed bool, policy string, err error) {
	policy, err = selected(thpDir + "/shmem_enabled")
	if err != nil {
		return false, "", err
	}
	// Kernels with per-size settings (6.11 on) may override the global
	// one for 2 MiB pages.
	if own, err := selected(thpDir + "/hugepages-2048kB/shmem_enabled"); err == nil && own != "inherit" {
		policy = own
	}
	switch policy {
	case "advise", "within_size", "always", "force":
		return true, policy, nil
	}
	return false, policy, nil
}

// AnonHugePages reports whether this system backs ordinary (anonymous)
// memory with huge pages when a mapping asks for them, and the policy
// that decides it (enabled in the same directory: "always", "madvise" or
// "never"). A private arena's memory is anonymous.
func AnonHugePages() (allowed bool, policy string, err error) {
	policy, err = selected(thpDir + "/enabled")
	if err != nil {
		return false, "", err
	}
	if own, err := selected(thpDir + "/hugepages-2048kB/enabled"); err == nil && own != "inherit" {
		policy = own
	}
	switch policy {
	case "always", "madvise":
		return true, policy, nil
	}
	return false, policy, nil
}

// selected returns the bracketed choice of a sysfs setting such as
// "always within_size [advise] never deny force".
func selected(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			return strings.Trim(f, "[]"), nil
		}
	}
	return "", fmt.Errorf("objectstore: no setting selected in %s: %q", path, strings.TrimSpace(string(b)))
}

// hugePagesFor decides whether an arena created with mode gets huge pages;
// private says it is anonymous memory rather than shared memory.
func hugePagesFor(mode HugePages, private bool) (bool, error) {
	switch mode {
	case HugePagesOff:
		return false, nil
	case HugePagesAuto, HugePagesOn:
	default:
		return false, errs.Invalidf("objectstore: huge pages mode %d", int(mode))
	}
	allowed, policy, err := ShmemHugePages()
	setting, allow := "shmem_enabled", "advise"
	if private {
		allowed, policy, err = AnonHugePages()
		setting, allow = "enabled", "madvise"
	}
	switch {
	case mode == HugePagesAuto:
		return allowed, nil
	case errors.Is(err, os.ErrNotExist):
		return false, errs.Unavailablef("huge pages were asked for, and this kernel has no transparent huge pages (%s is missing)", thpDir)
	case err != nil:
		return false, errs.Unavailablef("huge pages were asked for, and their setting cannot be read: %v", err)
	case !allowed:
		kind := "shared memory"
		if private {
			kind = "this process's memory"
		}
		return false, errs.Unavailablef("huge pages were asked for, and this system does not give them to %s "+
			"(their %s setting in %s is %q); as root, allow them with `echo %s > %s/%s`, or leave huge pages on auto or off",
			kind, setting, thpDir, policy, allow, thpDir, setting)
	}
	return true, nil
}
