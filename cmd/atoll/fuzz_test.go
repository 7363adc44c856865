package main

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// FuzzStartParsers feeds `atoll start`'s value parsers (--resources,
// --object-store-memory, --address/--nats, --amm-policies, as the flags
// bound to the node's settings read them) any text: each accepts it with
// a valid value or refuses it with ErrInvalidArgument, never panics.
func FuzzStartParsers(f *testing.F) {
	for _, s := range []string{"GPU=1,disk=2.5", `{"GPU": 2}`, "2GiB", "1e3", "10.0.0.1:6380", "nats://a:1,b:2",
		"Replicate,Rebalance:0.05", "{", "=,", "NaN", "-1", "Rebalance:NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"resources", "object-store-memory", "nats", "amm-policies"} {
			cmd, fl := startCommand()
			if err := cmd.Flags().Set(name, s); err != nil {
				t.Fatalf("--%s %q: %v, want its error kept for Check", name, s, err)
			}
			err := fl.settings.Check()
			if err != nil && !errors.Is(err, atoll.ErrInvalidArgument) {
				t.Fatalf("--%s %q: %v, want nil or ErrInvalidArgument", name, s, err)
			}
			if err != nil {
				continue
			}
			switch c := fl.cfg; name {
			case "resources":
				for res, v := range c.Resources {
					if res == "" || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Fatalf("--resources %q accepted %s=%v", s, res, v)
					}
				}
			case "object-store-memory":
				if c.ObjectStoreMemory == 0 && s != "" {
					t.Fatalf("--object-store-memory %q accepted 0", s)
				}
			case "nats":
				if u := c.NATSURL; u != "" && !strings.HasPrefix(u, "nats://") && !strings.Contains(u, "://") {
					t.Fatalf("--nats %q became %q", s, u)
				}
			}
		}
	})
}
