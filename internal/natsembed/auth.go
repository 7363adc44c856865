package natsembed

import (
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// authenticator admits clients through Config.Authorize and gives each
// its permissions (nats-server's CustomClientAuthentication).
type authenticator struct {
	check func(user, password string) (*Permissions, bool)
	log   *slog.Logger

	mu       sync.Mutex
	refused  int // since logged
	loggedAt time.Time
}

// responseTTL bounds how long a client may answer a request it received
// (Permissions.Responses).
const responseTTL = 10 * time.Minute

func (a *authenticator) Check(c server.ClientAuthentication) bool {
	o := c.GetOpts()
	if o == nil {
		return false
	}
	perms, ok := a.check(o.Username, o.Password)
	if !ok {
		a.refuse(o.Username, c)
		return false
	}
	c.RegisterUser(&server.User{Username: o.Username, Permissions: perms.server()})
	return true
}

// refuse logs a refused client, at most once a second: a stranger
// retrying in a loop must not flood the head's log.
func (a *authenticator) refuse(user string, c server.ClientAuthentication) {
	if a.log == nil {
		return
	}
	a.mu.Lock()
	a.refused++
	now := time.Now()
	if now.Sub(a.loggedAt) < time.Second {
		a.mu.Unlock()
		return
	}
	n := a.refused
	a.refused, a.loggedAt = 0, now
	a.mu.Unlock()
	a.log.Warn("nats: refused a client's credentials (not this cluster's secret)", "user", user, "remote", remote(c), "refused", n)
}

func remote(c server.ClientAuthentication) string {
	if a := c.RemoteAddress(); a != nil {
		return a.String()
	}
	return "in process"
}

// server converts p to nats-server's form; nil stays nil (every subject).
func (p *Permissions) server() *server.Permissions {
	if p == nil {
		return nil
	}
	sp := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: p.Publish.Allow, Deny: p.Publish.Deny},
		Subscribe: &server.SubjectPermission{Allow: p.Subscribe.Allow, Deny: p.Subscribe.Deny},
	}
	if p.Responses {
		sp.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: responseTTL}
	}
	return sp
}
