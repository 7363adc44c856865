package nodeconfig

import (
	"errors"
	"reflect"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/atoll-runtime/atoll/internal/cluster/membership"
	"github.com/atoll-runtime/atoll/internal/errs"
)

//go:generate go test -run ^TestFieldDocs$ -update .

// Flags are `atoll start`'s flags, bound to the fields of a Config
// (BindFlags): one flag per setting a command line gives a node, under
// the names users know, with the field's doc as its usage.
//
// A malformed value (a resource list, a size, a URL, a path that is not
// an executable) does not fail the flag's parsing: the flag keeps the
// error, and Check reports it as ErrInvalidArgument naming the flag,
// after the command's own rules (which flags go together). Validate
// then checks the settings as WithDefaults does, naming the flags.
type Flags struct {
	cfg   *Config
	fs    *pflag.FlagSet
	names map[string]string // field → flag name
	order []string          // flag names, in binding order
	bad   map[string]error  // flag name → its malformed value's error
}

// flagSpec binds one setting: the field it sets (a Go selector from Config,
// as fieldDocs and envFields name it), the flag's name, how it reads
// text, and what its usage adds to the field's doc (what the command
// line's values mean where they differ from the field's).
type flagSpec struct {
	field, name string
	value       *value
	note        string
	hidden      bool
}

// notFlags are the settings no flag sets, and why.
var notFlags = map[string]string{
	"Driver":                  "a driver's own node: atoll.Init sets it",
	"RandomPorts":             "a port of 0 picks a free one",
	"WorkerOutput":            "a Go value",
	"TracerProvider":          "a Go value (OTEL_EXPORTER_OTLP_* configures the exporter)",
	"MeterProvider":           "a Go value",
	"MetricsBestEffort":       "a default metrics port is best effort, a given one is not",
	"Credentials.Secret":      "never on a command line, where ps shows it: " + EnvSecret + " or --secret-file",
	"Credentials.ReaderToken": "a reader's, not a node's (" + EnvReaderToken + ")",
	"Logger":                  "a Go value",
}

// BindFlags registers on fs a flag for each setting a command line
// gives a node, bound to the field of *c it sets, and sets *c to the
// defaults the flags show: those of WithDefaults, except that a node
// `atoll start` runs serves metrics on DefaultMetricsPort (best effort
// unless --metrics-port is given) and, on a head, the dashboard. A port
// given as 0 picks a free port (RandomPorts); --num-cpus 0 gives the
// node none (NoCPUs).
func BindFlags(fs *pflag.FlagSet, c *Config) *Flags {
	*c = Config{
		NodeIP: "127.0.0.1", Port: DefaultPort, GossipPort: DefaultGossipPort, TransferPort: DefaultTransferPort,
		NumCPUs: float64(runtime.NumCPU()), FailureTimeout: membership.DefaultFailureBudget,
		MetricsPort: DefaultMetricsPort, MetricsBestEffort: true, Dashboard: true, DashboardPort: DefaultDashboardPort,
	}
	f := &Flags{cfg: c, fs: fs, names: map[string]string{}, bad: map[string]error{}}
	cr := &c.Credentials
	for _, fl := range []flagSpec{
		{field: "Head", name: "head", value: boolValue(&c.Head)},
		{field: "Address", name: "address", value: stringValue(&c.Address, "HOST:PORT")},
		{field: "NATSURL", name: "nats", value: natsURLValue(&c.NATSURL, "--nats")},
		{field: "GCSDir", name: "gcs-dir", value: dirValue(&c.GCSDir, "--gcs-dir", true)},
		{field: "SessionDir", name: "session-dir", value: dirValue(&c.SessionDir, "--session-dir", false)},
		{field: "Port", name: "port", value: portValue(&c.Port, &c.RandomPorts), note: "0 picks a free port"},
		{field: "GossipPort", name: "gossip-port", value: portValue(&c.GossipPort, &c.RandomPorts), note: "0 picks a free port"},
		{field: "TransferPort", name: "transfer-port", value: portValue(&c.TransferPort, &c.RandomPorts), note: "0 picks a free port"},
		{field: "MetricsPort", name: "metrics-port", value: metricsPortValue(&c.MetricsPort, &c.MetricsBestEffort),
			note: "0: none; a default port already taken is a warning, a given one an error"},
		{field: "NodeIP", name: "node-ip", value: ipValue(&c.NodeIP)},
		{field: "NumCPUs", name: "num-cpus", value: cpusValue(&c.NumCPUs), note: "0: it runs no tasks; the default is this machine's CPU count"},
		{field: "Resources", name: "resources", value: resourcesValue(&c.Resources), note: "NAME=N,..., e.g. GPU=1,disk=2, or a JSON object"},
		{field: "ObjectStoreMemory", name: "object-store-memory", value: sizeValue(&c.ObjectStoreMemory, "--object-store-memory"),
			note: "bytes or a size with a unit, e.g. 2GiB or 500MB; default 30% of RAM"},
		{field: "StoreFullTimeout", name: "store-full-timeout", value: durationValue(&c.StoreFullTimeout)},
		{field: "PrefaultStore", name: "prefault-store", value: boolValue(&c.PrefaultStore)},
		{field: "StoreHugePages", name: "store-huge-pages", value: hugePagesValue(&c.StoreHugePages),
			note: "auto: where the system allows them for shared memory; on: fail where it does not"},
		{field: "SpillDirs", name: "spill-dirs", value: dirsValue(&c.SpillDirs), note: "comma-separated"},
		{field: "NoSpill", name: "no-spill", value: boolValue(&c.NoSpill)},
		{field: "WorkerBinary", name: "worker-binary", value: executableValue(&c.WorkerBinary, "--worker-binary"),
			note: "default: each job's driver binary"},
		{field: "JobBinariesMaxBytes", name: "job-binaries-max", value: sizeValue(&c.JobBinariesMaxBytes, "--job-binaries-max"),
			note: "e.g. 20GiB; default 8GiB"},
		{field: "Saturation", name: "saturation", value: floatValue(&c.Saturation)},
		{field: "PipelineDepth", name: "pipeline-depth", value: intValue(&c.PipelineDepth)},
		{field: "WorkerHeapFloor", name: "worker-heap-floor", value: sizeValue(&c.WorkerHeapFloor, "--worker-heap-floor"),
			note: "e.g. 64MiB; default 8MiB; GOGC or GOMEMLIMIT set turns it off"},
		{field: "IdleWorkerTimeout", name: "idle-worker-timeout", value: durationValue(&c.IdleWorkerTimeout)},
		{field: "TimelineCap", name: "timeline-cap", value: intValue(&c.TimelineCap)},
		{field: "FailureTimeout", name: "failure-timeout", value: positiveDurationValue(&c.FailureTimeout, "--failure-timeout")},
		{field: "RejoinGrace", name: "rejoin-grace", value: durationValue(&c.RejoinGrace), note: "default 3 failure timeouts, at least 10s"},
		{field: "AMM", name: "amm", value: boolValue(&c.AMM)},
		{field: "AMMInterval", name: "amm-interval", value: durationValue(&c.AMMInterval), note: "default 2s"},
		{field: "AMMPolicies", name: "amm-policies", value: policiesValue(&c.AMMPolicies),
			note: "e.g. Replicate,ReduceReplicas,Rebalance:0.05; default Replicate,ReduceReplicas"},
		{field: "FaultInjection", name: "fault-injection", value: boolValue(&c.FaultInjection)},
		{field: "Dashboard", name: "include-dashboard", value: boolValue(&c.Dashboard), note: "--include-dashboard=false: none"},
		{field: "DashboardPort", name: "dashboard-port", value: portValue(&c.DashboardPort, &c.RandomPorts), note: "0 picks a free port"},
		{field: "DashboardTraceURL", name: "dashboard-trace-url", value: stringValue(&c.DashboardTraceURL, "URL")},
		{field: "DashboardHost", name: "dashboard-host", value: stringValue(&c.DashboardHost, "ADDRESS"),
			note: "default 127.0.0.1 (this machine only); 0.0.0.0: every interface, the API then needs the reader token"},
		{field: "DashboardNames", name: "dashboard-host-names", value: stringValue(&c.DashboardNames, "NAMES"),
			note: "comma-separated host names users reach the dashboard by (IP addresses, localhost and this machine's name always work)"},
		{field: "Autoscaler", name: "autoscaler", value: stringValue(&c.Autoscaler, "FILE"), note: "head only; atoll up gives it its cluster file"},
		{field: "NodeType", name: "node-type", value: stringValue(&c.NodeType, "TYPE")},
		{field: "InstanceID", name: "instance-id", value: stringValue(&c.InstanceID, "ID"), hidden: true},
		{field: "LogFile", name: "log-file", value: dirValue(&c.LogFile, "--log-file", false), hidden: true},
		{field: "Credentials.SecretFile", name: "secret-file", value: stringValue(&cr.SecretFile, "FILE"),
			note: "default: $" + EnvSecret + " itself, else " + SecretFile() + "; a head without one generates it there"},
		{field: "Credentials.NATSCreds", name: "nats-creds", value: stringValue(&cr.NATSCreds, "FILE")},
		{field: "Credentials.TLSCert", name: "tls-cert", value: stringValue(&cr.TLSCert, "FILE")},
		{field: "Credentials.TLSKey", name: "tls-key", value: stringValue(&cr.TLSKey, "FILE")},
		{field: "Credentials.TLSCA", name: "tls-ca", value: stringValue(&cr.TLSCA, "FILE")},
	} {
		f.bind(fl)
	}
	return f
}

// bind registers one flag.
func (f *Flags) bind(fl flagSpec) {
	fl.value.bad = func(err error) {
		if err == nil {
			delete(f.bad, fl.name)
		} else {
			f.bad[fl.name] = err
		}
	}
	var v pflag.Value = fl.value
	if fl.value.typ == "bool" {
		v = boolFlag{fl.value}
	}
	f.fs.Var(v, fl.name, usage(fl))
	if fl.value.typ == "bool" {
		f.fs.Lookup(fl.name).NoOptDefVal = "true"
	}
	if fl.hidden {
		_ = f.fs.MarkHidden(fl.name)
	}
	f.names[fl.field] = fl.name
	f.order = append(f.order, fl.name)
}

// usage is a flag's usage: the first sentence of its field's doc, what
// the flag's values mean, and the environment variable that sets the
// field too.
func usage(fl flagSpec) string {
	u := fieldDocs[fl.field]
	if fl.note != "" {
		u += " (" + fl.note + ")"
	}
	if env, ok := envFields[fl.field]; ok {
		u += " [$" + env + "]"
	}
	return u
}

// Check reports the first flag given a malformed value, in the order
// the flags were bound, as ErrInvalidArgument naming it.
func (f *Flags) Check() error {
	for _, name := range f.order {
		if err := f.bad[name]; err != nil {
			return err
		}
	}
	return nil
}

// Validate checks c (the Config the flags were bound to, adjusted by the
// command's rules) as WithDefaults does, naming the fields by their
// flags: "--gossip-port 70000: want a port from 0 to 65535".
func (f *Flags) Validate(c *Config) error { return c.validate(f.name) }

// name is a field's name in a command line's errors: its flag, or the Go
// field when no flag sets it.
func (f *Flags) name(field string) string {
	if n, ok := f.names[field]; ok {
		return "--" + n
	}
	return goName(field)
}

// errFlag reports whether err is a malformed value the flag keeps (see
// Flags) rather than text the flag's type cannot read, which fails the
// parsing as pflag's own types do.
func errFlag(err error) bool { return errors.Is(err, errs.ErrInvalidArgument) }

// settingFields lists Config's settings as the flags and notFlags name
// them: its fields, and Credentials' as "Credentials.Field".
func settingFields() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			sf := t.Field(i)
			if sf.Anonymous {
				walk(sf.Type, prefix+sf.Name+".")
				continue
			}
			out = append(out, prefix+sf.Name)
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}

// trimDoc turns a field's doc into a flag's usage: its first sentence,
// without the field's name, with backquotes (which pflag reads as the
// argument's name) as plain quotes.
func trimDoc(field, doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	end := len(doc)
	for i := 0; i+1 < len(doc); i++ {
		if doc[i] == '.' && doc[i+1] == ' ' && !strings.HasSuffix(doc[:i], "e.g") && !strings.HasSuffix(doc[:i], "i.e") {
			end = i
			break
		}
	}
	doc = strings.TrimSuffix(doc[:end], ".")
	name := field[strings.LastIndexByte(field, '.')+1:]
	doc = strings.TrimPrefix(doc, name+" ")
	for _, verb := range []string{"is ", "are "} {
		doc = strings.TrimPrefix(doc, verb)
	}
	return strings.ReplaceAll(doc, "`", "'")
}
