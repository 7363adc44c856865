package nodeconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/errs"
)

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
	// Secret is the cluster secret itself (64 hex digits). Never given on
	// a command line (other users' ps would show it): `atoll start`
	// reads it from EnvSecret or a file.
	Secret string `json:",omitempty"`
	// SecretFile is a file (0600) holding the cluster secret. A head
	// that finds no secret generates one in SecretFile().
	SecretFile string `json:",omitempty"`
	// NATSCreds is a NATS credentials file (JWT and nkey seed) for a
	// cluster on an existing NATS server. Without it such a server
	// (Config.NATSURL) gets the secret's token.
	NATSCreds string `json:",omitempty"`
	// TLSCert is this process's PEM certificate file: with its key, the
	// head's NATS listener and every node's transfer port serve TLS.
	TLSCert string `json:",omitempty"`
	// TLSKey is the PEM key file of the certificate. TLSCert is the
	// certificate.
	TLSKey string `json:",omitempty"`
	// TLSCA is the PEM file of the CA that signed the cluster's
	// certificates: peers are verified against it (else the system's
	// roots), and servers require client certificates (mutual TLS).
	TLSCA string `json:",omitempty"`
	// ReaderToken connects a command as the cluster's read-only user
	// (cluster.ReaderUser): it may read the GCS and the nodes' stats but
	// change nothing. It is used unless a secret is given (Secret,
	// EnvSecret, SecretFile, EnvSecretFile); it wins over the head's
	// secret file on this machine. Default EnvReaderToken.
	ReaderToken string `json:",omitempty"`
}

// Security is resolved Credentials: the keys and TLS configs a process
// proves itself with and protects its channels with.
type Security struct {
	// Secret is the cluster secret; zero when none was found.
	Secret      clusterkey.Secret
	ReaderToken string
	NATSCreds   string
	// ServerTLS and ClientTLS are nil without TLS.
	ServerTLS, ClientTLS *tls.Config
}

// Resolve fills the empty fields from the environment (WithEnv) and
// loads the secret and TLS files. A missing secret is not an error here:
// the zero Security.Secret says "none found".
func (c Credentials) Resolve() (Security, error) {
	c = c.WithEnv()
	var s Security
	var err error
	s.ReaderToken = c.ReaderToken
	// A reader token given outright wins over the head's secret file
	// found on this machine, not over a secret given outright.
	if s.ReaderToken == "" || c.Secret != "" || c.SecretFile != "" {
		if s.Secret, err = c.FindSecret(); err != nil {
			return s, err
		}
	}
	s.NATSCreds = c.NATSCreds
	if s.NATSCreds != "" {
		if _, err := os.Stat(s.NATSCreds); err != nil {
			return s, errs.Invalidf("NATS credentials file: %v", err)
		}
	}
	s.ServerTLS, s.ClientTLS, err = tlsConfigs(c.TLSCert, c.TLSKey, c.TLSCA)
	return s, err
}

// FindSecret finds the cluster secret in the order Credentials gives;
// the zero secret if there is none.
func (c Credentials) FindSecret() (clusterkey.Secret, error) {
	c = c.WithEnv()
	if c.Secret != "" {
		return clusterkey.Parse(c.Secret)
	}
	if c.SecretFile != "" {
		return clusterkey.Load(c.SecretFile)
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

// NATSOptions are the NATS client options that present s as user (see
// cluster.Permissions): the NATS credentials file if given, else user
// with the password the secret derives for it, else the reader's token
// as cluster.ReaderUser; TLS if on. Replies come to the user's own
// inbox prefix, the only one its permissions let it read.
func (s Security) NATSOptions(user string) []nats.Option {
	var opts []nats.Option
	switch {
	case s.NATSCreds != "":
		opts = append(opts, nats.UserCredentials(s.NATSCreds))
	case !s.Secret.IsZero():
		opts = append(opts, nats.UserInfo(user, s.Secret.NATSPassword(user)), nats.CustomInboxPrefix(cluster.InboxPrefix(user)))
	case s.ReaderToken != "":
		opts = append(opts, nats.UserInfo(cluster.ReaderUser, s.ReaderToken), nats.CustomInboxPrefix(cluster.InboxPrefix(cluster.ReaderUser)))
	}
	if s.ClientTLS != nil {
		opts = append(opts, nats.Secure(s.ClientTLS))
	}
	return opts
}

// ErrNoSecret is a joining process's error when it found no secret.
func ErrNoSecret(address string) error {
	return errs.Unauthenticatedf("no cluster secret for %s: set %s (or %s to a file holding it), or run on the head's machine, where `atoll start --head` keeps it in %s",
		address, EnvSecret, EnvSecretFile, SecretFile())
}
