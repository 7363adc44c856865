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
// whole (socketFloor fails otherwise), read by the writer or by a reader
// goroutine: both percentiles are positive and the 99th no lower than the
// median, for the channel baseline too, and both processes' CPU is
// counted.
func TestFloorRoundTripsThroughAChildProcess(t *testing.T) {
	for _, viaReader := range []bool{false, true} {
		sock := socketFloor(500, viaReader)
		if sock.p50 <= 0 || sock.p99 < sock.p50 || sock.perS <= 0 {
			t.Fatalf("socket floor (via a reader: %v): p50 %.1f us, p99 %.1f us, %.0f/s", viaReader, sock.p50, sock.p99, sock.perS)
		}
		if sock.driverCPU <= 0 || sock.childCPU <= 0 {
			t.Fatalf("socket floor (via a reader: %v): CPU a trip %.1f us here, %.1f us in the child", viaReader, sock.driverCPU, sock.childCPU)
		}
	}
	ch := channelFloor(500)
	if ch.p50 <= 0 || ch.p99 < ch.p50 {
		t.Fatalf("channel floor p50 %.1f us, p99 %.1f us", ch.p50, ch.p99)
	}
}
