package nodeconfig

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// The environment variables that set a node's settings. Users set them
// (README, `atoll start --help`): keep their names.
const (
	// EnvAddress is the cluster address (Config.Address) a driver joins
	// when atoll.Init is given no WithAddress, and that `atoll start`
	// without --head and the CLI's cluster commands use when given no
	// --address ("auto" reads the address file `atoll start --head`
	// wrote).
	EnvAddress = "ATOLL_ADDRESS"
	// EnvSecret is the cluster secret itself (Credentials.Secret, 64 hex
	// digits).
	EnvSecret = "ATOLL_SECRET"
	// EnvSecretFile is a file (0600) holding the cluster secret
	// (Credentials.SecretFile).
	EnvSecretFile = "ATOLL_SECRET_FILE"
	// EnvNATSCreds is a NATS credentials file (Credentials.NATSCreds) for a
	// cluster on an existing NATS server (`atoll start --head --nats`).
	EnvNATSCreds = "ATOLL_NATS_CREDS"
	// EnvTLSCert, EnvTLSKey and EnvTLSCA are PEM files: this process's
	// certificate and key, and the CA that signed its peers'
	// (Credentials.TLSCert, TLSKey, TLSCA).
	EnvTLSCert = "ATOLL_TLS_CERT"
	EnvTLSKey  = "ATOLL_TLS_KEY"
	EnvTLSCA   = "ATOLL_TLS_CA"
	// EnvReaderToken is a reader's password (`atoll secret reader-token`,
	// Credentials.ReaderToken): what a command that only reads (status,
	// list, memory, timeline) needs on a machine without the cluster
	// secret.
	EnvReaderToken = "ATOLL_READER_TOKEN"
	// EnvCredentialsFD is an inherited descriptor (its number) from which
	// a job driver reads its credentials once, as VARIABLE=value lines of
	// the variables above: its node passes them this way, not in its
	// environment, which its worker processes and tasks would see.
	EnvCredentialsFD = "ATOLL_CREDENTIALS_FD"
	// EnvNode, set to a JSON-encoded Config (Config.Environ), makes a
	// program's atoll.Init run that node instead (node.RunFromEnv;
	// internal/testcluster starts test binaries this way, so their nodes
	// run the test's functions).
	EnvNode = "ATOLL_NODE"
	// EnvNodeType and EnvInstanceID set Config.NodeType and InstanceID
	// when they are empty: a Kubernetes worker pod's template sets them
	// (its instance id is the pod's name, from the downward API).
	EnvNodeType   = "ATOLL_NODE_TYPE"
	EnvInstanceID = "ATOLL_INSTANCE_ID"
)

// envFields maps each field a variable sets (a Go selector from Config)
// to it: the flags' usage names them. How each applies:
//
//   - Credentials' fields: an empty field takes its variable
//     (Credentials.WithEnv, when the credentials are resolved);
//   - AMM, AMMInterval, AMMPolicies: on a head, the variable wins over
//     the field (ApplyEnv, as node.Start begins; cluster.EnvAMM and the
//     like parse them);
//   - NodeType, InstanceID: an empty field takes its variable (ApplyEnv);
//   - Address: atoll.Init and the CLI read it when given no address
//     (AddressFromEnv); node.Start does not, for an empty Address means
//     an embedded node.
//
// A node process also reads faultplan.EnvPlan (its fault plan's rules
// for its role: not a setting) and EnvNode (its whole Config).
var envFields = map[string]string{
	"Address":                 EnvAddress,
	"Credentials.Secret":      EnvSecret,
	"Credentials.SecretFile":  EnvSecretFile,
	"Credentials.NATSCreds":   EnvNATSCreds,
	"Credentials.TLSCert":     EnvTLSCert,
	"Credentials.TLSKey":      EnvTLSKey,
	"Credentials.TLSCA":       EnvTLSCA,
	"Credentials.ReaderToken": EnvReaderToken,
	"AMM":                     cluster.EnvAMM,
	"AMMInterval":             cluster.EnvAMMInterval,
	"AMMPolicies":             cluster.EnvAMMPolicies,
	"NodeType":                EnvNodeType,
	"InstanceID":              EnvInstanceID,
}

// WithEnv returns c with each empty field set from its variable (see
// envFields).
func (c Credentials) WithEnv() Credentials {
	for _, f := range []struct {
		v   *string
		env string
	}{
		{&c.Secret, EnvSecret}, {&c.SecretFile, EnvSecretFile}, {&c.NATSCreds, EnvNATSCreds},
		{&c.TLSCert, EnvTLSCert}, {&c.TLSKey, EnvTLSKey}, {&c.TLSCA, EnvTLSCA}, {&c.ReaderToken, EnvReaderToken},
	} {
		if *f.v == "" {
			*f.v = os.Getenv(f.env)
		}
		if *f.v == "" {
			*f.v = inheritedCredentials()[f.env]
		}
	}
	return c
}

// ApplyEnv applies the environment to c as a node starts (see envFields):
// the credentials', NodeType's and InstanceID's empty fields and, on a
// head, the Active Memory Manager's variables. An unparsable variable is ErrInvalidArgument.
func (c *Config) ApplyEnv() error {
	c.Credentials = c.Credentials.WithEnv()
	if c.NodeType == "" {
		c.NodeType = os.Getenv(EnvNodeType)
	}
	if c.InstanceID == "" {
		c.InstanceID = os.Getenv(EnvInstanceID)
	}
	if !c.Head {
		return nil // only the head runs the AMM
	}
	var err error
	if c.AMM, c.AMMInterval, err = cluster.AMMFromEnv(c.AMM, c.AMMInterval); err != nil {
		return err
	}
	c.AMMPolicies, err = cluster.AMMPoliciesFromEnv(c.AMMPolicies)
	return err
}

// AddressFromEnv is the cluster address EnvAddress names, or "".
func AddressFromEnv() string { return os.Getenv(EnvAddress) }

// Environ returns the "EnvNode=<JSON>" entry that hands c to a node
// process (FromEnvNode reads it back). Fields tagged json:"-" do not
// travel.
func (c Config) Environ() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return EnvNode + "=" + string(b), nil
}

// FromEnvNode reads an EnvNode value: a node process is a cluster's head
// or joins one.
func FromEnvNode(s string) (Config, error) {
	var cfg Config
	if err := json.Unmarshal([]byte(s), &cfg); err != nil {
		return cfg, errs.Invalidf("not a JSON node.Config: %v", err)
	}
	if !cfg.Head && cfg.Address == "" {
		return cfg, errs.Invalidf("a node process either is the head (Head) or joins one (Address)")
	}
	return cfg, nil
}

// credentialVars are the variables that carry credentials (or name a
// process's node configuration, which holds them).
var credentialVars = []string{EnvSecret, EnvSecretFile, EnvReaderToken, EnvNATSCreds, EnvTLSKey, EnvCredentialsFD, EnvNode}

// WithoutCredentials returns env (VARIABLE=value entries) without the
// variables that carry credentials: what worker processes and job
// drivers start with, so that no task finds the cluster's secret in its
// environment.
func WithoutCredentials(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(credentialVars, name) {
			out = append(out, kv)
		}
	}
	return out
}

// CredentialLines renders credentials as what a job driver reads from
// EnvCredentialsFD: VARIABLE=value lines of the non-empty ones.
func CredentialLines(c Credentials) []byte {
	var b strings.Builder
	for _, kv := range [][2]string{{EnvSecret, c.Secret}, {EnvSecretFile, c.SecretFile}, {EnvNATSCreds, c.NATSCreds},
		{EnvTLSCert, c.TLSCert}, {EnvTLSKey, c.TLSKey}, {EnvTLSCA, c.TLSCA}, {EnvReaderToken, c.ReaderToken}} {
		if kv[1] != "" && !strings.ContainsAny(kv[1], "\n\x00") {
			b.WriteString(kv[0] + "=" + kv[1] + "\n")
		}
	}
	return []byte(b.String())
}

// inheritable are the variables a job driver takes from EnvCredentialsFD.
var inheritable = []string{EnvSecret, EnvSecretFile, EnvNATSCreds, EnvTLSCert, EnvTLSKey, EnvTLSCA, EnvReaderToken}

// maxCredentialBytes bounds what is read from EnvCredentialsFD.
const maxCredentialBytes = 64 << 10

var inherited struct {
	once sync.Once
	vars map[string]string
}

// inheritedCredentials reads, once, the credentials a job driver
// inherited on the descriptor EnvCredentialsFD names, closes it and
// removes the variable (the driver's worker processes inherit neither).
// Unknown variables and malformed lines are ignored; none without it.
func inheritedCredentials() map[string]string {
	inherited.once.Do(func() {
		inherited.vars = map[string]string{}
		s := os.Getenv(EnvCredentialsFD)
		if s == "" {
			return
		}
		_ = os.Unsetenv(EnvCredentialsFD)
		fd, err := strconv.Atoi(s)
		if err != nil || fd < 3 {
			return
		}
		f := os.NewFile(uintptr(fd), "credentials")
		defer f.Close()
		data, _ := io.ReadAll(io.LimitReader(f, maxCredentialBytes))
		for _, line := range strings.Split(string(data), "\n") {
			name, value, ok := strings.Cut(line, "=")
			if ok && value != "" && slices.Contains(inheritable, name) {
				inherited.vars[name] = value
			}
		}
	})
	return inherited.vars
}
