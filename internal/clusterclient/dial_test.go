package clusterclient_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

func TestResolveAddress(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if got := nodeconfig.AddressFile(); got != filepath.Join(os.TempDir(), fmt.Sprintf("atoll-%d", os.Getuid()), "current_cluster") {
		t.Fatalf("AddressFile %q: not under $TMPDIR/atoll-<uid>", got)
	}
	for _, a := range []string{"", "auto"} {
		if _, err := clusterclient.ResolveAddress(a); !errors.Is(err, errs.ErrNotFound) {
			t.Fatalf("ResolveAddress(%q) with no address file: %v, want ErrNotFound", a, err)
		}
	}
	if err := nodeconfig.MakeStateDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodeconfig.AddressFile(), []byte(" 127.0.0.1:7000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"":                     "nats://127.0.0.1:7000",
		"auto":                 "nats://127.0.0.1:7000",
		"10.0.0.1:6380":        "nats://10.0.0.1:6380",
		"nats://10.0.0.1:6380": "nats://10.0.0.1:6380",
		"tls://h:1":            "tls://h:1",
	} {
		got, err := clusterclient.ResolveAddress(in)
		if err != nil || got != want {
			t.Errorf("ResolveAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestAddressFileTrust: "auto" refuses an address file or state directory
// that others may write, or that another user owns.
func TestAddressFileTrust(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if err := nodeconfig.MakeStateDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodeconfig.AddressFile(), []byte("127.0.0.1:7000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterclient.ResolveAddress("auto"); err != nil {
		t.Fatalf("this user's own address file: %v", err)
	}
	if err := os.Chmod(nodeconfig.AddressFile(), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterclient.ResolveAddress("auto"); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a world-writable address file: %v, want ErrInvalidArgument", err)
	}
	if err := os.Chmod(nodeconfig.AddressFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(nodeconfig.StateDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterclient.ResolveAddress("auto"); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a world-writable state directory: %v, want ErrInvalidArgument", err)
	}
	if err := os.Chmod(nodeconfig.StateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		return // only root can give the file to another user
	}
	if err := os.Chown(nodeconfig.AddressFile(), 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterclient.ResolveAddress("auto"); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("an address file of uid 1: %v, want ErrInvalidArgument", err)
	}
}

// Nothing listens on port 1 of the loopback: dialing fails at once with a
// typed error naming the URL.
func TestDialClusterUnreachable(t *testing.T) {
	nc, url, err := clusterclient.Dial("127.0.0.1:1", "test", nodeconfig.Credentials{Secret: strings.Repeat("12", 32)})
	if !errors.Is(err, errs.ErrUnavailable) || nc != nil || url != "" {
		t.Fatalf("Dial to a closed port: %v, %v, %q; want ErrUnavailable", nc, err, url)
	}
}
