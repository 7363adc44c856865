package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
)

// sessionCookie is the cookie a login sets: a session made from the
// token, not the token.
const sessionCookie = "atoll_session"

// maxLoginBytes bounds a login request's body.
const maxLoginBytes = 4 << 10

// access decides who may see what: the Host a request names (against DNS
// rebinding: a page of another site cannot name this server by its own
// domain) and, where Config.Token is set, who proved they hold it.
type access struct {
	token    string   // "": no authentication
	hosts    []string // names served besides IP addresses, localhost and this machine's name
	loopback bool     // listening on a loopback address only
	session  string   // the session cookie's value: HMAC of the token
}

func newAccess(cfg Config, ln net.Listener) *access {
	a := &access{token: cfg.Token, hosts: []string{"localhost"}}
	for _, h := range cfg.Hosts {
		a.hosts = append(a.hosts, strings.ToLower(h))
	}
	if name, err := os.Hostname(); err == nil {
		a.hosts = append(a.hosts, strings.ToLower(name))
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		a.loopback = tcp.IP.IsLoopback()
	}
	if a.token != "" {
		m := hmac.New(sha256.New, []byte(a.token))
		m.Write([]byte("atoll dashboard session"))
		a.session = hex.EncodeToString(m.Sum(nil))
	}
	return a
}

// hostAllowed reports whether host (a Host header) names this server: an
// IP address, localhost, this machine's name or a configured name.
func (a *access) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if net.ParseIP(host) != nil {
		return true
	}
	return host != "" && slices.Contains(a.hosts, host)
}

// needsLogin reports whether path needs the token: the logs always (they
// hold what tasks print), the rest of the API when the dashboard listens
// beyond loopback.
func (a *access) needsLogin(path string) bool {
	if a.token == "" || !strings.HasPrefix(path, "/api/") || path == "/api/login" {
		return false
	}
	return strings.HasPrefix(path, "/api/logs/") || !a.loopback
}

// authorized reports whether r holds the token (Authorization: Bearer) or
// a session made from it (the cookie a login set).
func (a *access) authorized(r *http.Request) bool {
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(auth), []byte(a.token)) == 1 {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(a.session)) == 1
}

// sameOrigin reports whether a state-changing request comes from a page
// of this server: its Origin (browsers send one with every POST) names
// the Host the request was sent to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin" // not a browser, or the same site
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// wrap checks every request's Host, then its login where needed.
func (a *access) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.hostAllowed(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, fmt.Errorf("this dashboard does not serve %q: open it by its IP address, localhost, or a name it was given (--dashboard-host-names)", r.Host))
			return
		}
		if a.needsLogin(r.URL.Path) && !a.authorized(r) {
			writeError(w, http.StatusUnauthorized, fmt.Errorf("log in with the cluster's reader token (atoll reader-token) to see this"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// login turns the token, posted by a page of this server as
// {"token": "..."}, into a session cookie (HttpOnly, SameSite=Strict).
func (a *access) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, fmt.Errorf("a login must come from this dashboard's page"))
		return
	}
	if a.token == "" {
		w.WriteHeader(http.StatusNoContent) // nothing to log in to
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxLoginBytes)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("a login is {\"token\": \"...\"}: %v", err))
		return
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(req.Token)), []byte(a.token)) != 1 {
		writeError(w, http.StatusUnauthorized, fmt.Errorf("not the cluster's reader token"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: a.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}
