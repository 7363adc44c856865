package node_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/node"
)

func TestResolveAddress(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if got := node.AddressFile(); got != filepath.Join(os.TempDir(), "atoll", "current_cluster") {
		t.Fatalf("AddressFile %q: not under $TMPDIR/atoll", got)
	}
	for _, a := range []string{"", "auto"} {
		if _, err := node.ResolveAddress(a); !errors.Is(err, errs.ErrNotFound) {
			t.Fatalf("ResolveAddress(%q) with no address file: %v, want ErrNotFound", a, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(node.AddressFile()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(node.AddressFile(), []byte(" 127.0.0.1:7000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"":                     "nats://127.0.0.1:7000",
		"auto":                 "nats://127.0.0.1:7000",
		"10.0.0.1:6380":        "nats://10.0.0.1:6380",
		"nats://10.0.0.1:6380": "nats://10.0.0.1:6380",
		"tls://h:1":            "tls://h:1",
	} {
		got, err := node.ResolveAddress(in)
		if err != nil || got != want {
			t.Errorf("ResolveAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Nothing listens on port 1 of the loopback: dialing fails at once with a
// typed error naming the URL.
func TestDialClusterUnreachable(t *testing.T) {
	nc, url, err := node.DialCluster("127.0.0.1:1", "test")
	if !errors.Is(err, errs.ErrUnavailable) || nc != nil || url != "" {
		t.Fatalf("DialCluster to a closed port: %v, %v, %q; want ErrUnavailable", nc, err, url)
	}
}
