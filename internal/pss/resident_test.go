//go:build linux

package pss

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseResident(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Resident
		ok   bool
	}{
		{"Name:\tx\nVmHWM:\t    2136 kB\nVmRSS:\t    2048 kB\n", Resident{RSS: 2048 * 1024, Peak: 2136 * 1024}, true},
		{"VmRSS:\t1 kB\n", Resident{}, false},
		{"VmHWM:\t1 kB\nVmRSS:\tx kB\n", Resident{}, false},
		{"VmHWM:\t1 MB\nVmRSS:\t1 kB\n", Resident{}, false},
	} {
		got, err := parseResident([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseResident(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// TestResidentPeakAndReset: touching 64 MiB raises the RSS and the peak;
// unmapping it lowers the RSS, not the peak, until ResetPeak.
func TestResidentPeakAndReset(t *testing.T) {
	if _, err := ReadResident(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing process: %v, want os.ErrNotExist", err)
	}
	pid := os.Getpid()
	before, err := ReadResident(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(-1, 0, 64*mib, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	touched, err := ReadResident(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	after, err := ReadResident(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel folds its per-thread RSS counters into the peak lazily:
	// the peak may trail the RSS read a moment before by a few pages.
	if touched.RSS < before.RSS+60*mib || after.Peak < touched.RSS-4*mib || after.RSS > touched.RSS-60*mib {
		t.Fatalf("before %+v, 64 MiB touched %+v, unmapped %+v", before, touched, after)
	}
	if err := ResetPeak(pid); err != nil {
		t.Fatal(err)
	}
	reset, err := ReadResident(pid)
	if err != nil {
		t.Fatal(err)
	}
	if reset.Peak > after.Peak-60*mib {
		t.Fatalf("peak %d after ResetPeak, %d before it", reset.Peak, after.Peak)
	}
}
