package clusterkey

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/errs"
)

func TestParse(t *testing.T) {
	s, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(" " + s.Hex() + "\n")
	if err != nil || back != s {
		t.Fatalf("Parse(Hex()) = %v, %v", back, err)
	}
	for _, bad := range []string{"", "abc", strings.Repeat("zz", Len), strings.Repeat("00", Len), strings.Repeat("ab", Len+1)} {
		if _, err := Parse(bad); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("Parse(%q): %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// A secret never prints itself, and its keys differ per channel and per
// secret.
func TestRedactedAndDerived(t *testing.T) {
	s, _ := Generate()
	o, _ := Generate()
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "secret", s)
	for _, text := range []string{fmt.Sprint(s), fmt.Sprintf("%v %s %+v", s, s, s), logged.String()} {
		if strings.Contains(text, s.Hex()) || strings.Contains(text, s.Hex()[:16]) {
			t.Fatalf("the secret leaked: %q", text)
		}
	}
	keys := map[string]bool{}
	for _, k := range [][]byte{s.GossipKey(), s.TransferKey(), []byte(s.NATSPassword("head")), []byte(s.NATSPassword("reader")),
		o.GossipKey(), o.TransferKey(), []byte(o.NATSPassword("head")), []byte(s.Hex())} {
		keys[string(k)] = true
	}
	if len(keys) != 8 || len(s.GossipKey()) != 32 || s.Fingerprint() == o.Fingerprint() {
		t.Fatal("derived keys are not distinct")
	}
}

func TestSaveLoad(t *testing.T) {
	s, _ := Generate()
	path := filepath.Join(t.TempDir(), "secret")
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved with mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if got, err := Load(path); err != nil || got != s {
		t.Fatalf("Load: %v, %v", got, err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("Load of a group-readable file: %v, want ErrInvalidArgument", err)
	}
}
