package runtime

import (
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestLogToDriverSwitch: the option (atoll.WithoutLogToDriver) and
// ATOLL_LOG_TO_DRIVER=0 each turn the printing of tasks' output off.
func TestLogToDriverSwitch(t *testing.T) {
	on, off := true, false
	t.Setenv(EnvLogToDriver, "")
	if !logToDriver(on) || logToDriver(off) {
		t.Errorf("default %v, WithoutLogToDriver %v; want true, false", logToDriver(on), logToDriver(off))
	}
	t.Setenv(EnvLogToDriver, "0")
	if logToDriver(on) {
		t.Errorf("%s=0: still on", EnvLogToDriver)
	}
}

// TestOutputPrefix: a line's prefix names the task, the worker's pid and
// its node; a message past the bounds or with a bad node id is refused,
// and control characters in the name are dropped.
func TestOutputPrefix(t *testing.T) {
	node := ids.NewNodeID()
	p, err := outputPrefix(&atollpb.WorkerOutput{NodeId: node.Bytes(), Pid: 42, Name: "square\x1b[2J"})
	if err != nil || p != "(square[2J pid=42, node="+node.Short()+") " {
		t.Errorf("prefix %q, %v", p, err)
	}
	for _, bad := range []*atollpb.WorkerOutput{
		{NodeId: []byte{1, 2}, Pid: 1},
		{NodeId: node.Bytes(), Pid: -1},
		{NodeId: node.Bytes(), Name: strings.Repeat("x", maxOutputName+1)},
		{NodeId: node.Bytes(), Lines: make([]string, maxOutputLines+1)},
	} {
		if _, err := outputPrefix(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
