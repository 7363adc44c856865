package main

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/cluster"
)

// FuzzStartParsers feeds `atoll start`'s value parsers (--resources,
// --object-store-memory, --address/--nats, --amm-policies) any text:
// each accepts it with a valid value or refuses it with
// ErrInvalidArgument, never panics.
func FuzzStartParsers(f *testing.F) {
	for _, s := range []string{"GPU=1,disk=2.5", `{"GPU": 2}`, "2GiB", "1e3", "10.0.0.1:6380", "nats://a:1,b:2",
		"Replicate,Rebalance:0.05", "{", "=,", "NaN", "-1", "Rebalance:NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		invalid := func(what string, err error) {
			if err != nil && !errors.Is(err, atoll.ErrInvalidArgument) {
				t.Fatalf("%s %q: %v, want nil or ErrInvalidArgument", what, s, err)
			}
		}
		res, err := parseResources(s)
		invalid("--resources", err)
		for name, v := range res {
			if name == "" || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("--resources %q accepted %s=%v", s, name, v)
			}
		}
		n, err := parseStoreSize(s)
		invalid("--object-store-memory", err)
		if err == nil && n == 0 {
			t.Fatalf("--object-store-memory %q accepted 0", s)
		}
		u, err := natsURL("--address", s)
		invalid("--address", err)
		if err == nil && !strings.HasPrefix(u, "nats://") && !strings.Contains(u, "://") {
			t.Fatalf("--address %q became %q", s, u)
		}
		_, err = cluster.ParseAMMPolicies(s)
		invalid("--amm-policies", err)
	})
}
