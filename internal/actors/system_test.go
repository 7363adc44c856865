package actors

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

func TestNewSystemDemotesInfoToDebug(t *testing.T) {
	var quiet, verbose testutil.LogBuffer
	s1 := NewSystem(slog.New(slog.NewTextHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelInfo})))
	defer s1.Shutdown()
	s2 := NewSystem(slog.New(slog.NewTextHandler(&verbose, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer s2.Shutdown()

	if got := quiet.String(); got != "" {
		t.Errorf("info-level logger got protoactor output: %q", got)
	}
	got := verbose.String()
	if !strings.Contains(got, "actor system started") || !strings.Contains(got, "level=DEBUG") {
		t.Errorf("debug-level logger: want the start message at DEBUG, got %q", got)
	}
	if !strings.Contains(got, "lib=protoactor") || !strings.Contains(got, "system="+s2.ID) {
		t.Errorf("missing lib/system attributes: %q", got)
	}

	s1.Logger().Warn("kept")
	if !strings.Contains(quiet.String(), "level=WARN msg=kept") {
		t.Errorf("warnings must keep their level: %q", quiet.String())
	}
}

func TestNewSystemNilLogger(t *testing.T) {
	s := NewSystem(nil)
	defer s.Shutdown()
	if s.Logger() == nil {
		t.Fatal("nil logger")
	}
}
