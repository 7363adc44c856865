package natsembed

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Authorize admits users by name and password and applies the
// permissions it returns; the in-process connection presents
// ConnectUser; refusals are logged.
func TestAuthorize(t *testing.T) {
	var logged bytes.Buffer
	srv := start(t, Config{
		Authorize: func(user, password string) (*Permissions, bool) {
			switch {
			case user == "admin" && password == "pw-admin":
				return nil, true
			case user == "limited" && password == "pw-limited":
				return &Permissions{
					Publish:   SubjectRules{Allow: []string{"ok.>"}},
					Subscribe: SubjectRules{Allow: []string{"_INBOX.>", "ok.>"}},
				}, true
			}
			return nil, false
		},
		ConnectUser: "admin", ConnectPassword: "pw-admin",
		AuthLog: slog.New(slog.NewTextHandler(&logged, nil)),
	})
	admin := connect(t, srv)
	url := srv.ClientURL()
	for _, creds := range []nats.Option{nats.UserInfo("admin", "wrong"), nats.UserInfo("nobody", "pw-admin"), nats.Token("pw-admin")} {
		if nc, err := nats.Connect(url, creds, nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
			if nc != nil {
				nc.Close()
			}
			t.Fatalf("wrong credentials: %v, want an authorization violation", err)
		}
	}
	if !strings.Contains(logged.String(), "refused a client's credentials") {
		t.Fatalf("no refusal logged: %q", logged.String())
	}

	violations := make(chan error, 4)
	limited, err := nats.Connect(url, nats.UserInfo("limited", "pw-limited"), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Close()
	got := make(chan string, 4)
	if _, err := admin.Subscribe(">", func(m *nats.Msg) { got <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = limited.Publish("denied.x", nil)
	_ = limited.Publish("ok.x", nil)
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "denied.x") {
			t.Fatalf("violation %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no permissions violation for denied.x")
	}
	select {
	case s := <-got:
		if s != "ok.x" {
			t.Fatalf("delivered %q first, want ok.x (denied.x must not be delivered)", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ok.x was not delivered")
	}
}
