package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// TestParseAMMPolicies: a list of names becomes the policies in its order
// (Rebalance with its threshold); every malformed list is an
// invalid-argument error that says what is wrong.
func TestParseAMMPolicies(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []amm.Policy
		err  string // a part of the error; "" for none
	}{
		{spec: "Replicate,ReduceReplicas", want: []amm.Policy{amm.Replicate{}, amm.ReduceReplicas{}}},
		{spec: "Rebalance", want: []amm.Policy{amm.Rebalance{}}},
		{spec: "Replicate,ReduceReplicas,Rebalance:0.05",
			want: []amm.Policy{amm.Replicate{}, amm.ReduceReplicas{}, amm.Rebalance{Threshold: 0.05}}},
		{spec: "Rebalance:0.2,RetireNode", want: []amm.Policy{amm.Rebalance{Threshold: 0.2}, amm.RetireNode{}}},
		{spec: " replicate , REBALANCE : 0.5 ", want: []amm.Policy{amm.Replicate{}, amm.Rebalance{Threshold: 0.5}}},

		{spec: "", err: "want a comma-separated list of Replicate, ReduceReplicas, RetireNode, Rebalance"},
		{spec: "  ", err: "want a comma-separated list"},
		{spec: "Replicate,,Rebalance", err: "an empty item"},
		{spec: "Replicate,", err: "an empty item"},
		{spec: ":0.1", err: "an empty item"},
		{spec: "Replicate,Rebalanse", err: `unknown policy "Rebalanse": want Replicate, ReduceReplicas, RetireNode, Rebalance`},
		{spec: "Replicate,ReduceReplicas,replicate", err: "Replicate given twice"},
		{spec: "Rebalance:0.1,Rebalance:0.2", err: "Rebalance given twice"},
		{spec: "ReduceReplicas:2", err: `ReduceReplicas takes no argument ("2")`},
		{spec: "Rebalance:", err: `Rebalance threshold ""`},
		{spec: "Rebalance:0", err: `Rebalance threshold "0": want a fraction of capacity between 0 and 1`},
		{spec: "Rebalance:1", err: `Rebalance threshold "1"`},
		{spec: "Rebalance:-0.1", err: `Rebalance threshold "-0.1"`},
		{spec: "Rebalance:NaN", err: `Rebalance threshold "NaN"`},
		{spec: "Rebalance:5%", err: `Rebalance threshold "5%"`},
		{spec: "Rebalance:0.1:0.2", err: `Rebalance threshold "0.1:0.2"`},
	} {
		got, err := ParseAMMPolicies(tc.spec)
		if tc.err == "" {
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseAMMPolicies(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseAMMPolicies(%q) = %v, %v; want an invalid-argument error with %q", tc.spec, got, err, tc.err)
		}
		if !strings.Contains(err.Error(), "AMM policies "+`"`+tc.spec+`"`) {
			t.Errorf("ParseAMMPolicies(%q): error %q does not name the list", tc.spec, err)
		}
	}
}

// TestAMMPoliciesFromEnv: EnvAMMPolicies, when set, wins over the
// configured policies; a bad value is an error naming the variable, and
// leaves the configured policies.
func TestAMMPoliciesFromEnv(t *testing.T) {
	cfg := []amm.Policy{amm.ReduceReplicas{}}
	t.Setenv(EnvAMMPolicies, "")
	if got, err := AMMPoliciesFromEnv(cfg); err != nil || !reflect.DeepEqual(got, cfg) {
		t.Fatalf("unset: %v, %v; want the configured %v", got, err, cfg)
	}
	t.Setenv(EnvAMMPolicies, "Replicate,Rebalance:0.05")
	want := []amm.Policy{amm.Replicate{}, amm.Rebalance{Threshold: 0.05}}
	if got, err := AMMPoliciesFromEnv(cfg); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("set: %v, %v; want %v", got, err, want)
	}
	t.Setenv(EnvAMMPolicies, "Rebalance:2")
	got, err := AMMPoliciesFromEnv(cfg)
	if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), `ATOLL_AMM_POLICIES="Rebalance:2": Rebalance threshold "2"`) {
		t.Fatalf("bad value: %v, %v; want an invalid-argument error naming the variable", got, err)
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("bad value: got policies %v, want the configured %v", got, cfg)
	}
}
