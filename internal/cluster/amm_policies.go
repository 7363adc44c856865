package cluster

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// EnvAMMPolicies selects the AMM's policies, in order, as a
// comma-separated list of their names (ParseAMMPolicies), e.g.
// "Replicate,ReduceReplicas" or "Replicate,Rebalance:0.05".
const EnvAMMPolicies = "ATOLL_AMM_POLICIES"

// ammPolicies are the policies ParseAMMPolicies knows, by Name, in the
// order its errors list them (zero values: the defaults).
var ammPolicies = []amm.Policy{amm.Replicate{}, amm.ReduceReplicas{}, amm.RetireNode{}, amm.Rebalance{}}

// ParseAMMPolicies parses a comma-separated list of policy names, in
// order: Replicate, ReduceReplicas, RetireNode, Rebalance (names match
// without regard to case; spaces around them are ignored). Rebalance takes
// an optional threshold after a colon, a fraction of capacity strictly
// between 0 and 1 (Rebalance:0.05; default amm.DefaultRebalanceThreshold).
// An empty list or item, an unknown name, a name given twice or a bad
// threshold is an errs.ErrInvalidArgument.
func ParseAMMPolicies(spec string) ([]amm.Policy, error) {
	return parseAMMPolicies(fmt.Sprintf("AMM policies %q", spec), spec)
}

// parseAMMPolicies is ParseAMMPolicies, its errors starting with what.
func parseAMMPolicies(what, spec string) ([]amm.Policy, error) {
	names := make([]string, len(ammPolicies))
	for i, p := range ammPolicies {
		names[i] = p.Name()
	}
	if strings.TrimSpace(spec) == "" {
		return nil, errs.Invalidf("%s: want a comma-separated list of %s", what, strings.Join(names, ", "))
	}
	var out []amm.Policy
	for item := range strings.SplitSeq(spec, ",") {
		name, arg, hasArg := strings.Cut(item, ":")
		name, arg = strings.TrimSpace(name), strings.TrimSpace(arg)
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, name) })
		switch {
		case name == "":
			return nil, errs.Invalidf("%s: an empty item", what)
		case i < 0:
			return nil, errs.Invalidf("%s: unknown policy %q: want %s", what, name, strings.Join(names, ", "))
		case slices.ContainsFunc(out, func(p amm.Policy) bool { return p.Name() == names[i] }):
			return nil, errs.Invalidf("%s: %s given twice", what, names[i])
		}
		p := ammPolicies[i]
		if r, ok := p.(amm.Rebalance); ok && hasArg {
			t, err := strconv.ParseFloat(arg, 64)
			// !(0 < t < 1) also refuses NaN.
			if err != nil || !(t > 0 && t < 1) {
				return nil, errs.Invalidf("%s: Rebalance threshold %q: want a fraction of capacity between 0 and 1, e.g. Rebalance:0.05", what, arg)
			}
			r.Threshold = t
			p = r
		} else if hasArg {
			return nil, errs.Invalidf("%s: %s takes no argument (%q)", what, names[i], arg)
		}
		out = append(out, p)
	}
	return out, nil
}

// AMMPoliciesFromEnv applies EnvAMMPolicies to policies (the variable wins
// when set) and reports an unparsable value.
func AMMPoliciesFromEnv(policies []amm.Policy) ([]amm.Policy, error) {
	v := os.Getenv(EnvAMMPolicies)
	if v == "" {
		return policies, nil
	}
	p, err := parseAMMPolicies(fmt.Sprintf("%s=%q", EnvAMMPolicies, v), v)
	if err != nil {
		return policies, err
	}
	return p, nil
}
