package main

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	serveEcho() // the floor's child: this binary started again
	os.Exit(m.Run())
}

// The floor's round trips go through a real child process and come back
// whole (socketFloor fails otherwise): both percentiles are positive and
// the 99th no lower than the median, for the channel baseline too.
func TestFloorRoundTripsThroughAChildProcess(t *testing.T) {
	sock, ch := socketFloor(500), channelFloor(500)
	if sock.p50 <= 0 || sock.p99 < sock.p50 {
		t.Fatalf("socket floor p50 %.1f us, p99 %.1f us", sock.p50, sock.p99)
	}
	if ch.p50 <= 0 || ch.p99 < ch.p50 {
		t.Fatalf("channel floor p50 %.1f us, p99 %.1f us", ch.p50, ch.p99)
	}
}
