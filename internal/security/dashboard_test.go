package security_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// TestDashboardHostCheck: the head's dashboard refuses a request naming
// another site (what a page of attacker.example sends once its name
// resolves to the head: DNS rebinding) with 421, and a node's log to
// anyone without the reader token; it listens on 127.0.0.1 by default.
func TestDashboardHostCheck(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Node: nodeconfig.Config{Dashboard: true}})
	base := c.DashboardURL()
	secret, err := clusterkey.Parse(c.Secret())
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, host, token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	logs := "/api/logs/" + c.Node(0).ID
	for _, tc := range []struct {
		what, path, host, token string
		want                    int
	}{
		{"the API, by another site's name", "/api/cluster", "attacker.example", "", http.StatusMisdirectedRequest},
		{"the page, by another site's name", "/", "attacker.example", "", http.StatusMisdirectedRequest},
		{"the API, by IP address", "/api/cluster", "", "", http.StatusOK},
		{"a node's log without the token", logs, "", "", http.StatusUnauthorized},
		{"a node's log with the secret's other passwords", logs, "", secret.NATSPassword(cluster.ClientUser), http.StatusUnauthorized},
		{"a node's log with the reader token", logs, "", secret.NATSPassword(cluster.ReaderUser), http.StatusOK},
	} {
		if got := get(tc.path, tc.host, tc.token); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.what, got, tc.want)
		}
	}
	if want := "http://127.0.0.1:"; len(base) < len(want) || base[:len(want)] != want {
		t.Errorf("the dashboard listens at %s, want 127.0.0.1", base)
	}
}
