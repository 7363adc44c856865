package node

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Environment variables that give a process its credentials when
// Credentials leaves the field empty. Set the same ones on every node and
// driver of a cluster (and on the CLI).
const (
	// EnvSecret is the cluster secret itself (64 hex digits).
	EnvSecret = "ATOLL_SECRET"
	// EnvSecretFile is a file (0600) holding the cluster secret.
	EnvSecretFile = "ATOLL_SECRET_FILE"
	// EnvNATSCreds is a NATS credentials file (JWT and nkey seed) for a
	// cluster on an existing NATS server (`atoll start --head --nats`).
	EnvNATSCreds = "ATOLL_NATS_CREDS"
	// EnvTLSCert, EnvTLSKey and EnvTLSCA are PEM files: this process's
	// certificate and key, and the CA that signed its peers'.
	EnvTLSCert = "ATOLL_TLS_CERT"
	EnvTLSKey  = "ATOLL_TLS_KEY"
	EnvTLSCA   = "ATOLL_TLS_CA"
	// EnvReaderToken is a reader's password (`atoll secret reader-token`):
	// what a command that only reads (status, list, memory, timeline)
	// needs on a machine without the cluster secret.
	EnvReaderToken = "ATOLL_READER_TOKEN"
)

// SecretFile is where `atoll start --head` keeps the cluster secret on
// its machine (0600, in StateDir); nodes, drivers and the CLI on that
// machine read it when no other secret is given.
func SecretFile() string { return filepath.Join(StateDir(), "cluster_secret") }

// Credentials are what a process proves itself with to a cluster. Every
// field is optional; an empty one is read from its environment variable.
//
// The cluster secret is found in this order: Secret, EnvSecret,
// SecretFile (the field), EnvSecretFile, then the head's SecretFile() on
// this machine. From it come the embedded NATS server's token, the
// gossip's AES-GCM key and the object-transfer handshake key (package
// internal/clusterkey). A head that finds none generates one; any other
// node (and a driver joining a cluster) fails with ErrUnauthenticated.
//
// TLS is on when TLSCert and TLSKey are set: the head's NATS listener and
// every node's transfer port serve TLS, and clients verify them against
// TLSCA (else the system's roots). With TLSCA set, servers also require
// and verify their clients' certificates (mutual TLS).
type Credentials struct {
	Secret     string `json:",omitempty"`
	SecretFile string `json:",omitempty"`
	// NATSCreds is a NATS credentials file for an existing NATS server
	// (Config.NATSURL); without it such a server gets the secret's token.
	NATSCreds string `json:",omitempty"`
	TLSCert   string `json:",omitempty"`
	TLSKey    string `json:",omitempty"`
	TLSCA     string `json:",omitempty"`
	// ReaderToken connects a command as the cluster's read-only user
	// (cluster.ReaderUser): it may read the GCS and the nodes' stats but
	// change nothing. It is used unless a secret is given (Secret,
	// EnvSecret, SecretFile, EnvSecretFile); it wins over the head's
	// secret file on this machine. Default EnvReaderToken.
	ReaderToken string `json:",omitempty"`
}

// security is resolved Credentials.
type security struct {
	secret      clusterkey.Secret
	readerToken string
	natsCreds   string
	// serverTLS and clientTLS are nil without TLS.
	serverTLS, clientTLS *tls.Config
}

// resolve fills the empty fields from the environment and loads the
// secret and TLS files. A missing secret is not an error here: the zero
// secret says "none found".
func (c Credentials) resolve() (security, error) {
	var s security
	or := func(v, env string) string {
		if v != "" {
			return v
		}
		return os.Getenv(env)
	}
	var err error
	s.readerToken = or(c.ReaderToken, EnvReaderToken)
	given := or(c.Secret, EnvSecret) != "" || or(c.SecretFile, EnvSecretFile) != ""
	// A reader token given outright wins over the head's secret file
	// found on this machine, not over a secret given outright.
	if s.readerToken == "" || given {
		if s.secret, err = c.FindSecret(); err != nil {
			return s, err
		}
	}
	s.natsCreds = or(c.NATSCreds, EnvNATSCreds)
	if s.natsCreds != "" {
		if _, err := os.Stat(s.natsCreds); err != nil {
			return s, errs.Invalidf("NATS credentials file: %v", err)
		}
	}
	s.serverTLS, s.clientTLS, err = tlsConfigs(or(c.TLSCert, EnvTLSCert), or(c.TLSKey, EnvTLSKey), or(c.TLSCA, EnvTLSCA))
	return s, err
}

// FindSecret finds the cluster secret in the order Credentials gives;
// the zero secret if there is none.
func (c Credentials) FindSecret() (clusterkey.Secret, error) {
	or := func(v, env string) string {
		if v != "" {
			return v
		}
		return os.Getenv(env)
	}
	if text := or(c.Secret, EnvSecret); text != "" {
		return clusterkey.Parse(text)
	}
	if path := or(c.SecretFile, EnvSecretFile); path != "" {
		return clusterkey.Load(path)
	}
	path := SecretFile()
	if err := CheckOwned(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return clusterkey.Secret{}, nil
		}
		return clusterkey.Secret{}, fmt.Errorf("the head's secret file: %w", err)
	}
	return clusterkey.Load(path)
}

// tlsConfigs builds the server and client TLS configs of cert, key and
// ca (PEM files); none without cert and key.
func tlsConfigs(certFile, keyFile, caFile string) (server, client *tls.Config, err error) {
	switch {
	case certFile == "" && keyFile == "":
		if caFile != "" {
			return nil, nil, errs.Invalidf("TLS: a CA (%s) without a certificate and key (%s, %s)", caFile, EnvTLSCert, EnvTLSKey)
		}
		return nil, nil, nil
	case certFile == "" || keyFile == "":
		return nil, nil, errs.Invalidf("TLS: give both a certificate and its key (%s, %s)", EnvTLSCert, EnvTLSKey)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, errs.Invalidf("TLS: load %s and %s: %v", certFile, keyFile, err)
	}
	// Full-size records from the first byte: transfers are bulk, and a
	// connection idle for a second would otherwise restart small.
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, DynamicRecordSizingDisabled: true}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, DynamicRecordSizingDisabled: true}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, nil, errs.Invalidf("TLS: CA: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, errs.Invalidf("TLS: CA %s: no PEM certificate in it", caFile)
		}
		server.ClientCAs, server.ClientAuth = pool, tls.RequireAndVerifyClientCert
		client.RootCAs = pool
	}
	return server, client, nil
}

// natsOptions are the NATS client options that present s as user (see
// cluster.Permissions): the NATS credentials file if given, else user
// with the password the secret derives for it, else the reader's token
// as cluster.ReaderUser; TLS if on. Replies come to the user's own
// inbox prefix, the only one its permissions let it read.
func (s security) natsOptions(user string) []nats.Option {
	var opts []nats.Option
	switch {
	case s.natsCreds != "":
		opts = append(opts, nats.UserCredentials(s.natsCreds))
	case !s.secret.IsZero():
		opts = append(opts, nats.UserInfo(user, s.secret.NATSPassword(user)), nats.CustomInboxPrefix(cluster.InboxPrefix(user)))
	case s.readerToken != "":
		opts = append(opts, nats.UserInfo(cluster.ReaderUser, s.readerToken), nats.CustomInboxPrefix(cluster.InboxPrefix(cluster.ReaderUser)))
	}
	if s.clientTLS != nil {
		opts = append(opts, nats.Secure(s.clientTLS))
	}
	return opts
}

// errNoSecret is a joining process's error when it found no secret.
func errNoSecret(address string) error {
	return errs.Unauthenticatedf("no cluster secret for %s: set %s (or %s to a file holding it), or run on the head's machine, where `atoll start --head` keeps it in %s",
		address, EnvSecret, EnvSecretFile, SecretFile())
}

// resolveSecurity resolves the node's credentials. An embedded node
// needs none (nothing outside its process reaches it); a head without a
// secret generates one (`atoll start --head` saves it in SecretFile
// first, so this only happens to heads started through the Go API:
// Node.Secret tells it); any other node needs the cluster's.
func (n *Node) resolveSecurity() error {
	if n.cfg.embedded() {
		return nil
	}
	var err error
	if n.sec, err = n.cfg.Credentials.resolve(); err != nil {
		return err
	}
	switch {
	case !n.sec.secret.IsZero():
	case n.cfg.Head:
		if n.sec.secret, err = clusterkey.Generate(); err != nil {
			return err
		}
		n.log.Info("generated a cluster secret for this head (not saved: give nodes Node.Secret)", "fingerprint", n.sec.secret.Fingerprint())
	default:
		return errNoSecret(n.cfg.Address)
	}
	n.log.Debug("cluster credentials", "secret", n.sec.secret.Fingerprint(), "tls", n.sec.serverTLS != nil)
	return nil
}

// Secret is the cluster secret this node holds (hex; "" on an embedded
// node): what other nodes and drivers need to join (Credentials.Secret).
func (n *Node) Secret() string {
	if n.sec.secret.IsZero() {
		return ""
	}
	return n.sec.secret.Hex()
}
