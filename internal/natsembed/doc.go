// Package natsembed runs a nats-server with JetStream inside the current
// process.
//
// The head node of an atoll cluster embeds NATS by default: it carries the
// control plane (node registration, GCS requests, events) and JetStream
// backs the GCS tables. A user who outgrows one machine points every node at
// an existing NATS cluster instead and never starts this server.
//
// The server logs nothing by default. Config.Logger routes its logs to a
// *slog.Logger (notices, debug and trace lines at debug level, warnings and
// errors at their own levels).
//
// Typical use:
//
//	srv, err := natsembed.Start(natsembed.Config{StoreDir: dir})
//	if err != nil { ... }
//	defer srv.Shutdown()
//	nc, err := srv.Connect()
package natsembed
