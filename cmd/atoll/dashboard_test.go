package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// checkDashboard checks that a head `atoll start` ran in the background
// printed its dashboard's URL, records it, and serves the node's own log
// file there.
func checkDashboard(t *testing.T, startOutput string, rec nodeRecord, logFile string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^dashboard: (http://127\.0\.0\.1:\d+)$`).FindStringSubmatch(startOutput)
	if m == nil || rec.DashboardURL != m[1] {
		t.Fatalf("dashboard URL: record %q, start output:\n%s", rec.DashboardURL, startOutput)
	}
	// A node's log needs the reader token: without it the dashboard
	// answers 401, with it (as a bearer) it serves the file.
	resp, err := http.Get(m[1] + "/api/logs/" + rec.NodeID)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("dashboard log without the reader token: status %d, want 401", resp.StatusCode)
	}
	token, errOut, err := execute("reader-token")
	if err != nil {
		t.Fatalf("reader-token: %v\n%s", err, errOut)
	}
	req, _ := http.NewRequest(http.MethodGet, m[1]+"/api/logs/"+rec.NodeID, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	defer resp.Body.Close()
	var l struct {
		File string `json:"file"`
		Text string `json:"text"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard log: status %d, %v", resp.StatusCode, err)
	}
	if l.File != logFile || l.Text == "" {
		t.Errorf("the dashboard serves log %q (%d bytes), want %s", l.File, len(l.Text), logFile)
	}
}
