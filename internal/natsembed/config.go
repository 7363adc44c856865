package natsembed

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Port values with a special meaning in Config.Port.
const (
	// RandomPort asks the operating system for a free TCP port.
	RandomPort = 0
	// NoListener disables the TCP listener: only in-process connections
	// (Server.Connect, nats.InProcessServer) can reach the server.
	NoListener = -1
)

// Defaults applied by Start to zero fields of Config.
const (
	// DefaultHost is loopback: an embedded server is private to the machine
	// unless the operator opts in to a reachable address.
	DefaultHost = "127.0.0.1"
	// DefaultServerName names the server in logs and JetStream metadata.
	DefaultServerName = "atoll-head"
	// DefaultReadyTimeout bounds how long Start waits for the server to
	// accept connections; JetStream recovery of a large store can take a
	// few seconds.
	DefaultReadyTimeout = 10 * time.Second
	// ConnectTimeout bounds Connect's handshake with the server.
	ConnectTimeout = 10 * time.Second
	// DefaultMaxStore is the JetStream file storage the server lets its
	// streams reserve. The GCS's three buckets reserve 192 MiB by default
	// and hold kilobytes; nats-server's own default, 75% of the disk's free
	// space when the server starts, refused them on a disk with less than
	// 256 MiB free, so a node did not start where it needed almost
	// nothing. A fixed limit makes start-up independent of the free space;
	// a write to a disk that is really full still fails, with its error.
	DefaultMaxStore = 1 << 30
)

// Config describes an embedded server. The zero value is not valid:
// StoreDir is required.
type Config struct {
	// Host is the interface the TCP listener binds. Default DefaultHost.
	Host string
	// Port is the client port: RandomPort (0, the default) picks a free
	// port, NoListener (-1) serves in-process connections only.
	Port int
	// StoreDir is the directory of JetStream file storage. Required: the
	// GCS tables live there and survive a restart of the server.
	StoreDir string
	// ServerName names the server. Default DefaultServerName. It must not
	// contain spaces.
	ServerName string
	// MaxMemory caps JetStream memory storage in bytes. 0 (the default)
	// keeps nats-server's own default (75% of system memory); atoll stores
	// its tables on file, so this limit rarely matters.
	MaxMemory int64
	// MaxStore caps what JetStream file storage streams may reserve, in
	// bytes. Default DefaultMaxStore.
	MaxStore int64
	// ReadyTimeout bounds the wait for the server to accept connections.
	// Default DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Token, when set, is the authorization token every client must
	// present (Connect presents it).
	Token string
	// Authorize, when set, replaces Token: a client is admitted when
	// Authorize accepts the user name and password it presents, with the
	// permissions Authorize returns (nil: every subject). Connect
	// presents ConnectUser and ConnectPassword.
	Authorize func(user, password string) (*Permissions, bool)
	// ConnectUser and ConnectPassword are what Connect presents to
	// Authorize.
	ConnectUser, ConnectPassword string
	// AuthLog, when set, receives a warning for clients Authorize refused
	// (at most one a second, with the count since the last).
	AuthLog *slog.Logger
	// TLS, when set, makes the TCP listener require TLS; a config that
	// requires and verifies client certificates makes it mutual TLS.
	// In-process connections skip TLS.
	TLS *tls.Config
	// Logger receives the server's logs. Nil (the default) discards them,
	// except that a fatal start-up error is still returned by Start.
	Logger *slog.Logger
}

// Permissions are the subjects a client may publish and subscribe to,
// as NATS applies them: a subject must match an Allow pattern (an empty
// Allow allows every subject) and no Deny pattern.
type Permissions struct {
	Publish, Subscribe SubjectRules
	// Responses lets the client publish one reply to the reply subject of
	// each request it received, whatever Publish says.
	Responses bool
}

// SubjectRules are the allowed and denied subject patterns (NATS
// wildcards * and >) of one direction.
type SubjectRules struct {
	Allow, Deny []string
}

// withDefaults returns a copy of c with defaults applied, or an error if a
// field is invalid.
func (c Config) withDefaults() (Config, error) {
	if c.StoreDir == "" {
		return c, errors.New("natsembed: Config.StoreDir is required")
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port < NoListener || c.Port > 65535 {
		return c, fmt.Errorf("natsembed: Config.Port %d out of range (-1 for no listener, 0 for random, 1-65535)", c.Port)
	}
	if c.ServerName == "" {
		c.ServerName = DefaultServerName
	}
	if strings.ContainsAny(c.ServerName, " \t\r\n") {
		return c, fmt.Errorf("natsembed: Config.ServerName %q contains white space", c.ServerName)
	}
	if c.MaxMemory < 0 {
		return c, fmt.Errorf("natsembed: Config.MaxMemory %d is negative", c.MaxMemory)
	}
	if c.MaxStore < 0 {
		return c, fmt.Errorf("natsembed: Config.MaxStore %d is negative", c.MaxStore)
	}
	if c.MaxStore == 0 {
		c.MaxStore = DefaultMaxStore
	}
	if c.ReadyTimeout < 0 {
		return c, fmt.Errorf("natsembed: Config.ReadyTimeout %v is negative", c.ReadyTimeout)
	}
	if c.Authorize != nil && c.Token != "" {
		return c, errors.New("natsembed: Config.Token and Config.Authorize are exclusive")
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	return c, nil
}
