package main

import (
	"log"
	"net"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// The -floor mode: what one synchronous round trip between two processes
// costs with no runtime at all, the floor under tasks_sync and
// actor_calls_sync. The driver and a child process of its own (this
// binary again) pass 64 bytes back and forth over a unix socket pair,
// each side reading through Go's netpoller as atoll's connections do.
// The baseline is the same ping-pong between two goroutines of one
// process over a channel pair.

// echoEnv marks the child: it echoes what it reads on fd 3.
const echoEnv = "HOTPATH_ECHO"

// serveEcho echoes on fd 3 until its peer closes, if this process is the
// floor's child, and exits.
func serveEcho() {
	if os.Getenv(echoEnv) != "1" {
		return
	}
	f := os.NewFile(3, "echo")
	c, err := net.FileConn(f) // a copy of the descriptor
	_ = f.Close()
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		if err != nil {
			os.Exit(0)
		}
		if _, err := c.Write(buf[:n]); err != nil {
			os.Exit(0)
		}
	}
}

// latency is the median and 99th percentile of trips.
type latency struct{ p50, p99 float64 }

func percentiles(trips []time.Duration) latency {
	slices.Sort(trips)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return latency{p50: us(trips[len(trips)/2]), p99: us(trips[len(trips)*99/100])}
}

// socketFloor times n round trips with a child process.
func socketFloor(n int) latency {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		log.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	child := os.NewFile(uintptr(fds[1]), "child")
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), echoEnv+"=1")
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	_ = child.Close()
	parent := os.NewFile(uintptr(fds[0]), "parent")
	c, err := net.FileConn(parent) // a copy of the descriptor
	_ = parent.Close()
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		_ = c.Close()
		_ = cmd.Wait()
	}()
	buf := make([]byte, 64)
	trip := func() time.Duration {
		t := time.Now()
		if _, err := c.Write(buf); err != nil {
			log.Fatal(err)
		}
		for got := 0; got < len(buf); {
			m, err := c.Read(buf[got:])
			if err != nil {
				log.Fatal(err)
			}
			got += m
		}
		return time.Since(t)
	}
	return timeTrips(n, trip)
}

// channelFloor times n round trips between two goroutines.
func channelFloor(n int) latency {
	ping, pong := make(chan []byte), make(chan []byte)
	go func() {
		for b := range ping {
			pong <- b
		}
	}()
	defer close(ping)
	buf := make([]byte, 64)
	return timeTrips(n, func() time.Duration {
		t := time.Now()
		ping <- buf
		<-pong
		return time.Since(t)
	})
}

// timeTrips runs 1,000 trips to warm up, then times n.
func timeTrips(n int, trip func() time.Duration) latency {
	for range 1000 {
		trip()
	}
	trips := make([]time.Duration, n)
	for i := range trips {
		trips[i] = trip()
	}
	return percentiles(trips)
}

// floor measures and reports the socket floor against the channel one.
func floor(asJSON bool, n int) {
	sock, ch := socketFloor(n), channelFloor(n)
	cfg := map[string]any{"round_trips": n, "bytes": 64, "transport": "unix socket pair, two processes", "atoll_version": benchfmt.Version()}
	recs := []benchfmt.Record{
		benchfmt.NewRecord("hotpath", "socket_round_trip_p50_us", sock.p50, "us", "goroutine_channel_round_trip_p50_us", ch.p50, cfg),
		benchfmt.NewRecord("hotpath", "socket_round_trip_p99_us", sock.p99, "us", "goroutine_channel_round_trip_p99_us", ch.p99, cfg),
	}
	emit(asJSON, recs)
}
