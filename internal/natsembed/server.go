package natsembed

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is a running embedded nats-server with JetStream. It implements
// nats.InProcessConnProvider, so nats.InProcessServer(srv) connects without
// TCP even when a listener exists.
type Server struct {
	cfg  Config
	ns   *server.Server
	once sync.Once
}

// Start starts a server and waits until it accepts connections and
// JetStream is enabled. It returns an error (never panics) if the
// configuration is invalid, the port cannot be bound, JetStream cannot use
// StoreDir, or the server is not ready within Config.ReadyTimeout.
func Start(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		Host:               cfg.Host,
		Port:               cfg.Port,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		JetStreamMaxMemory: cfg.MaxMemory,
		JetStreamMaxStore:  cfg.MaxStore,
		NoSigs:             true,
		NoLog:              cfg.Logger == nil,
		// Closed connections are kept for the monitoring endpoint, which
		// atoll does not serve: the default 10000 (~2 KB each, with their
		// subscriptions) grow a long-lived head by every driver that
		// connected.
		MaxClosedClients: 16,
		Authorization:    cfg.Token,
	}
	if cfg.Authorize != nil {
		opts.CustomClientAuthentication = &authenticator{check: cfg.Authorize, log: cfg.AuthLog}
	}
	if cfg.TLS != nil {
		opts.TLSConfig, opts.TLS = cfg.TLS, true
		opts.TLSVerify = cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert
		opts.TLSTimeout = 5
	}
	switch cfg.Port {
	case RandomPort:
		opts.Port = server.RANDOM_PORT
	case NoListener:
		opts.Port = 0
		opts.DontListen = true
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: configure server: %w", err)
	}
	logger := &serverLogger{log: cfg.Logger}
	ns.SetLogger(logger, logger.debugEnabled(), false)

	// Start returns once the listeners and JetStream are set up, or right
	// after logging a fatal error.
	ns.Start()
	s := &Server{cfg: cfg, ns: ns}
	if msg := logger.fatalError(); msg != "" {
		s.Shutdown()
		return nil, fmt.Errorf("natsembed: start server: %s", msg)
	}
	if !ns.ReadyForConnections(cfg.ReadyTimeout) {
		s.Shutdown()
		if msg := logger.fatalError(); msg != "" {
			return nil, fmt.Errorf("natsembed: start server: %s", msg)
		}
		return nil, fmt.Errorf("natsembed: server not ready for connections after %v", cfg.ReadyTimeout)
	}
	if !ns.JetStreamEnabled() {
		s.Shutdown()
		return nil, errors.New("natsembed: server started without JetStream")
	}
	return s, nil
}

// ClientURL returns the nats:// URL of the TCP listener, or "" when the
// server was started with NoListener.
func (s *Server) ClientURL() string {
	if s.cfg.Port == NoListener {
		return ""
	}
	return s.ns.ClientURL()
}

// Addr returns the TCP address of the client listener, or nil when there is
// none.
func (s *Server) Addr() net.Addr {
	if s.cfg.Port == NoListener {
		return nil
	}
	return s.ns.Addr()
}

// InProcessConn returns an in-memory connection to the server; it
// implements nats.InProcessConnProvider.
func (s *Server) InProcessConn() (net.Conn, error) {
	return s.ns.InProcessConn()
}

// Connect opens an in-process client connection (no TCP, no TLS) that
// presents the server's token. Options are applied after the defaults.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	// The handshake goes through an in-process pipe: nats.go's default
	// 2 s ran out twice in a loaded test lane (the server's goroutines
	// waited for a CPU); a caller's Timeout option still wins.
	def := []nats.Option{nats.InProcessServer(s), nats.Timeout(ConnectTimeout)}
	if s.cfg.Token != "" {
		def = append(def, nats.Token(s.cfg.Token))
	}
	if s.cfg.Authorize != nil {
		def = append(def, nats.UserInfo(s.cfg.ConnectUser, s.cfg.ConnectPassword))
	}
	opts = append(def, opts...)
	nc, err := nats.Connect("", opts...) // in process: no URL, no TLS
	if err != nil {
		return nil, fmt.Errorf("natsembed: connect: %w", err)
	}
	return nc, nil
}

// NATSServer returns the underlying nats-server, for monitoring and
// advanced configuration.
func (s *Server) NATSServer() *server.Server { return s.ns }

// Shutdown stops the server, closing client connections, and waits until
// all of its goroutines have exited. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
}
