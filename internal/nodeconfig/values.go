package nodeconfig

import (
	"encoding/json"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/objectstore"
)

// value is a pflag.Value that reads a flag's text into a Config field.
// set returns an ErrInvalidArgument for a malformed value, which the
// flag keeps (bad) for Flags.Check, and any other error for text its
// type cannot read, which fails the parsing.
type value struct {
	typ string // the argument's name in usage, or "bool"
	set func(string) error
	get func() string
	bad func(error) // set by Flags.bind
}

func (v *value) Type() string   { return v.typ }
func (v *value) String() string { return v.get() }

// boolFlag is a bool value: pflag lets it be given without "=true".
type boolFlag struct{ *value }

func (boolFlag) IsBoolFlag() bool { return true }

func (v *value) Set(s string) error {
	err := v.set(s)
	if err != nil && !errFlag(err) {
		return err
	}
	v.bad(err)
	return nil
}

func boolValue(p *bool) *value {
	return &value{typ: "bool", get: func() string { return strconv.FormatBool(*p) }, set: func(s string) error {
		b, err := strconv.ParseBool(s)
		*p = b
		return err
	}}
}

func stringValue(p *string, typ string) *value {
	return &value{typ: typ, get: func() string { return *p }, set: func(s string) error { *p = s; return nil }}
}

func intValue(p *int) *value {
	return &value{typ: "int", get: func() string { return strconv.Itoa(*p) }, set: func(s string) error {
		n, err := strconv.Atoi(s)
		if err == nil {
			*p = n
		}
		return err
	}}
}

func floatValue(p *float64) *value {
	return &value{typ: "float", get: func() string { return formatFloat(*p) }, set: func(s string) error {
		f, err := strconv.ParseFloat(s, 64)
		if err == nil {
			*p = f
		}
		return err
	}}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func durationValue(p *time.Duration) *value {
	return &value{typ: "duration", get: func() string {
		if *p == 0 {
			return "0" // the field's default, which pflag does not show
		}
		return p.String()
	}, set: func(s string) error {
		d, err := time.ParseDuration(s)
		if err == nil {
			*p = d
		}
		return err
	}}
}

// positiveDurationValue reads a duration that must be positive (the
// field's zero would mean its default, which the flag shows instead).
func positiveDurationValue(p *time.Duration, name string) *value {
	v := durationValue(p)
	set := v.set
	v.set = func(s string) error {
		if err := set(s); err != nil {
			return err
		}
		if *p <= 0 {
			return errs.Invalidf("%s %v: want a positive duration, e.g. 5s", name, *p)
		}
		return nil
	}
	return v
}

// portValue reads a port; 0 picks a free one (RandomPorts). The range is
// the settings' check (Flags.Validate).
func portValue(p *int, random *bool) *value {
	v := intValue(p)
	set := v.set
	v.set = func(s string) error {
		if err := set(s); err != nil {
			return err
		}
		if *p == 0 {
			*random = true
		}
		return nil
	}
	return v
}

// metricsPortValue reads --metrics-port: 0 serves none, and a port given
// is one the node must serve on (MetricsBestEffort off).
func metricsPortValue(p *int, bestEffort *bool) *value {
	v := intValue(p)
	set := v.set
	v.set = func(s string) error {
		if err := set(s); err != nil {
			return err
		}
		*bestEffort = false
		if *p < 0 || *p > math.MaxUint16 {
			return errs.Invalidf("--metrics-port %d: want a port from 1 to 65535 (0: serve no metrics)", *p)
		}
		return nil
	}
	return v
}

// ipValue reads an IP address in its canonical form; anything else is
// kept as given, for Flags.Validate to refuse.
func ipValue(p *string) *value {
	return &value{typ: "IP", get: func() string { return *p }, set: func(s string) error {
		*p = s
		if ip := net.ParseIP(s); ip != nil {
			*p = ip.String()
		}
		return nil
	}}
}

// cpusValue reads --num-cpus: a number of CPU slots, 0 for none (NoCPUs).
func cpusValue(p *float64) *value {
	return &value{typ: "float", get: func() string {
		if *p == NoCPUs {
			return "0"
		}
		return formatFloat(*p)
	}, set: func(s string) error {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0) || f < 0:
			return errs.Invalidf("--num-cpus %v: want a number >= 0", f)
		case f == 0:
			*p = NoCPUs // a node that runs no tasks (a head serving only the control plane)
		default:
			*p = f
		}
		return nil
	}}
}

// dirValue reads a path and makes it absolute (a background node runs
// in another directory); with required, an empty one is malformed.
func dirValue(p *string, name string, required bool) *value {
	return &value{typ: "DIR", get: func() string { return *p }, set: func(s string) error {
		*p = s
		if s == "" {
			if required {
				return errs.Invalidf("%s: want a directory", name)
			}
			return nil
		}
		abs, err := filepath.Abs(s)
		if err != nil {
			return errs.Invalidf("%s %q: %v", name, s, err)
		}
		*p = abs
		return nil
	}}
}

// dirsValue reads a comma-separated list of paths, made absolute.
func dirsValue(p *[]string) *value {
	return &value{typ: "DIRS", get: func() string { return strings.Join(*p, ",") }, set: func(s string) error {
		*p = nil
		for dir := range strings.SplitSeq(s, ",") {
			if dir = strings.TrimSpace(dir); dir == "" {
				continue
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return errs.Invalidf("--spill-dirs %q: %v", dir, err)
			}
			*p = append(*p, abs)
		}
		return nil
	}}
}

// executableValue reads the path of an executable file, made absolute.
func executableValue(p *string, name string) *value {
	return &value{typ: "PATH", get: func() string { return *p }, set: func(s string) error {
		*p = s
		if s == "" {
			return nil // the default
		}
		abs, err := filepath.Abs(s)
		if err != nil {
			return errs.Invalidf("%s %q: %v", name, s, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return errs.Invalidf("%s %q: %v", name, s, err)
		}
		if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return errs.Invalidf("%s %q: not an executable file", name, s)
		}
		*p = abs
		return nil
	}}
}

// natsURLValue reads a HOST:PORT or nats:// URL (or a comma-separated
// list of them), kept with the nats:// scheme on every URL.
func natsURLValue(p *string, name string) *value {
	return &value{typ: "URL", get: func() string { return *p }, set: func(s string) error {
		*p = s
		if s == "" {
			return nil // none
		}
		u, err := NATSURL(name, s)
		if err == nil {
			*p = u
		}
		return err
	}}
}

// NATSURL checks a HOST:PORT or nats:// URL (or a comma-separated list
// of them) given as name and returns it with the nats:// scheme on every
// URL.
func NATSURL(name, s string) (string, error) {
	bad := func() error {
		return errs.Invalidf("%s %q: want HOST:PORT or a nats:// URL, e.g. 127.0.0.1:%d", name, s, DefaultPort)
	}
	var urls []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if !strings.Contains(part, "://") {
			part = "nats://" + part
		}
		u, err := url.Parse(part)
		if err != nil || u.Host == "" {
			return "", bad()
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || host == "" {
			return "", bad()
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > math.MaxUint16 {
			return "", errs.Invalidf("%s %q: port %q: want 1 to 65535", name, s, port)
		}
		urls = append(urls, part)
	}
	return strings.Join(urls, ","), nil
}

// sizeValue reads a size in bytes, or with a unit such as 2GiB or 500MB.
// Its text is kept as given (String), which reads back the same.
func sizeValue(p *uint64, name string) *value {
	text := ""
	return &value{typ: "SIZE", get: func() string {
		if text == "" && *p != 0 {
			return strconv.FormatUint(*p, 10)
		}
		return text
	}, set: func(s string) error {
		text = s
		if s == "" {
			*p = 0 // the default
			return nil
		}
		n, err := benchfmt.ParseSize(s)
		if err != nil {
			return errs.Invalidf("%s: %v", name, err)
		}
		if n <= 0 {
			return errs.Invalidf("%s %q: want a positive size, e.g. 2GiB (omit the flag for 30%% of RAM)", name, s)
		}
		*p = uint64(n)
		return nil
	}}
}

// hugePagesValue reads auto, on or off.
func hugePagesValue(p *objectstore.HugePages) *value {
	return &value{typ: "auto|on|off", get: p.String, set: func(s string) error {
		h, err := objectstore.ParseHugePages(s)
		if err == nil {
			*p = h
		}
		return err
	}}
}

// resourcesValue reads custom resources: "NAME=N,NAME=N" or a JSON
// object {"NAME": N}. CPUs are --num-cpus', not these.
func resourcesValue(p *map[string]float64) *value {
	text := ""
	return &value{typ: "NAME=N,...", get: func() string { return text }, set: func(s string) error {
		text = s
		res, err := parseResources(s)
		if err == nil {
			*p = res
		}
		return err
	}}
}

func parseResources(s string) (map[string]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	res := map[string]float64{}
	if strings.HasPrefix(s, "{") {
		dec := json.NewDecoder(strings.NewReader(s))
		if err := dec.Decode(&res); err != nil {
			return nil, errs.Invalidf("--resources %s: not a JSON object of numbers (%v), e.g. {\"GPU\":1}", s, err)
		}
		if dec.More() {
			return nil, errs.Invalidf("--resources %s: text after the JSON object", s)
		}
	} else {
		for item := range strings.SplitSeq(s, ",") {
			name, val, ok := strings.Cut(item, "=")
			name, val = strings.TrimSpace(name), strings.TrimSpace(val)
			if !ok || name == "" || val == "" {
				return nil, errs.Invalidf("--resources %q: entry %q: want NAME=N, e.g. GPU=1,disk=2", s, strings.TrimSpace(item))
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return nil, errs.Invalidf("--resources %q: %s=%s: not a number", s, name, val)
			}
			if _, dup := res[name]; dup {
				return nil, errs.Invalidf("--resources %q: %s given twice", s, name)
			}
			res[name] = v
		}
	}
	names := make([]string, 0, len(res))
	for name := range res {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := res[name]
		switch {
		case name == "" || strings.ContainsAny(name, "=,{}\" \t\n"):
			return nil, errs.Invalidf("--resources %s: bad resource name %q", s, name)
		case strings.EqualFold(name, "CPU"):
			return nil, errs.Invalidf("--resources %s: give CPUs with --num-cpus", s)
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return nil, errs.Invalidf("--resources %s: %s=%v: want a non-negative number", s, name, v)
		}
	}
	return res, nil
}

// policiesValue reads the AMM's policies (cluster.ParseAMMPolicies).
func policiesValue(p *[]amm.Policy) *value {
	text := ""
	return &value{typ: "POLICIES", get: func() string { return text }, set: func(s string) error {
		text = s
		if s == "" {
			*p = nil
			return nil
		}
		policies, err := cluster.ParseAMMPolicies(s)
		if err == nil {
			*p = policies
		}
		return err
	}}
}
