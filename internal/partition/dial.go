package partition

import (
	"context"
	"net"
	"time"
)

// dialTimeout bounds a dial through Dial (nats.go's custom dialers get
// no deadline of their own; its default connect timeout is 2 s).
const dialTimeout = 5 * time.Second

// Dial dials address unless the node is cut off, and tracks the
// connection so that a cut closes it. It implements nats.CustomDialer.
func (s *Switch) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	return s.DialContext(ctx, network, address)
}

// DialContext is Dial with a context (the object-transfer client's
// dialer).
func (s *Switch) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if s.cut() {
		return nil, ErrCut
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Admit admits a connection a server accepted: tracked so that a cut
// closes it, or closed with ErrCut while the node is cut off.
func (s *Switch) Admit(c net.Conn) (net.Conn, error) { return s.track(c) }
