// Package clusterkey is a cluster's secret and the keys derived from it.
//
// One random 32-byte secret authenticates everything a cluster's
// processes say to each other: `atoll start --head` generates it (or
// takes the one it is given) and every node, driver and CLI command of
// the cluster holds it. Each channel gets its own key, derived with
// HMAC-SHA256 under a label, so no key used on one channel reveals
// another or the secret:
//
//   - NATSPassword(user): the password of each user of the embedded NATS
//     server (one user per role: the head, a node, a client, a reader;
//     clients without one cannot connect, subscribe or publish, and each
//     user gets its role's subjects only);
//   - GossipKey: memberlist's AES-256-GCM keyring (gossip is encrypted
//     and authenticated);
//   - TransferKey: the object-transfer port's mutual challenge-response
//     handshake (package remote).
//
// A Secret never prints itself: String and the slog value are
// "[redacted]"; Hex is the only way to its text.
package clusterkey

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Len is a secret's length in bytes.
const Len = 32

// Secret is a cluster's secret. The zero Secret is "none".
type Secret struct{ b [Len]byte }

// Generate returns a new random secret.
func Generate() (Secret, error) {
	var s Secret
	if _, err := rand.Read(s.b[:]); err != nil {
		return Secret{}, fmt.Errorf("clusterkey: generate: %w", err)
	}
	return s, nil
}

// Parse reads a secret's hex text (surrounding space ignored). Anything
// but 64 hex digits, or all zeros, is ErrInvalidArgument.
func Parse(text string) (Secret, error) {
	text = strings.TrimSpace(text)
	var s Secret
	if len(text) != 2*Len {
		return s, errs.Invalidf("cluster secret: want %d hex digits, got %d characters", 2*Len, len(text))
	}
	if _, err := hex.Decode(s.b[:], []byte(text)); err != nil {
		return Secret{}, errs.Invalidf("cluster secret: not hex: %v", err)
	}
	if s.IsZero() {
		return s, errs.Invalidf("cluster secret: all zeros")
	}
	return s, nil
}

// IsZero reports whether s is the zero (absent) secret.
func (s Secret) IsZero() bool { return s == Secret{} }

// Hex is the secret's text, for the file that stores it and the
// environment of processes that need it.
func (s Secret) Hex() string { return hex.EncodeToString(s.b[:]) }

// String keeps a secret out of logs and error messages.
func (s Secret) String() string { return "[redacted]" }

// LogValue keeps a secret out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Fingerprint is a short public name of the secret (8 hex digits of a
// derived hash) for logs and error messages: two processes whose
// fingerprints differ hold different secrets.
func (s Secret) Fingerprint() string { return hex.EncodeToString(s.derive("fingerprint")[:4]) }

// NATSPassword is the password of user on the embedded NATS server: the
// server checks it to admit the user and gives it the user's role's
// permissions. Whoever holds the secret can derive every user's; a
// password reveals neither the secret nor another user's (so a reader's
// password can be handed out alone).
func (s Secret) NATSPassword(user string) string {
	return hex.EncodeToString(s.derive("nats-user/" + user))
}

// GossipKey is memberlist's AES-256 key.
func (s Secret) GossipKey() []byte { return s.derive("memberlist") }

// TransferKey keys the object-transfer handshake.
func (s Secret) TransferKey() []byte { return s.derive("transfer") }

func (s Secret) derive(label string) []byte {
	m := hmac.New(sha256.New, s.b[:])
	m.Write([]byte("atoll/" + label))
	return m.Sum(nil)
}

// Load reads a secret from a file that must hold only it and be closed to
// other users (0600 or tighter; see Check).
func Load(path string) (Secret, error) {
	if err := Check(path); err != nil {
		return Secret{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, err
	}
	s, err := Parse(string(b))
	if err != nil {
		return Secret{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Check fails with ErrInvalidArgument if others than the owner may read
// or write path: a secret anyone can read protects nothing.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return errs.Invalidf("cluster secret file %s has mode %v: others may read it (chmod 600 %s)", path, perm, path)
	}
	return nil
}

// Save writes s to path with mode 0600, replacing the file atomically.
func Save(path string, s Secret) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(s.Hex() + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
