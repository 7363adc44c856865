package main

import (
	"encoding/json"
	"net/http"
	"regexp"
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
	resp, err := http.Get(m[1] + "/api/logs/" + rec.NodeID)
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
