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

// trips is what a floor measured: the round trips' latency, their rate,
// and the CPU each took in the driver's process and in the child's
// (kernel accounting; the child's includes its warm-up trips).
type trips struct {
	latency
	perS                float64
	driverCPU, childCPU float64 // µs a round trip
}

// socketFloor times n round trips with a child process. With viaReader
// the replies are read by a reader goroutine, which hands each to the
// goroutine waiting for it over a channel, as a connection's reader hands
// a result to the goroutine in Get; without, the goroutine that wrote
// reads its reply itself.
func socketFloor(n int, viaReader bool) trips {
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
	readReply := func(buf []byte) {
		for got := 0; got < len(buf); {
			m, err := c.Read(buf[got:])
			if err != nil {
				log.Fatal(err)
			}
			got += m
		}
	}
	buf := make([]byte, 64)
	replies := make(chan struct{})
	if viaReader {
		go func() {
			rbuf := make([]byte, 64)
			for {
				for got := 0; got < len(rbuf); {
					m, err := c.Read(rbuf[got:])
					if err != nil {
						close(replies)
						return
					}
					got += m
				}
				replies <- struct{}{}
			}
		}()
	}
	trip := func() time.Duration {
		t := time.Now()
		if _, err := c.Write(buf); err != nil {
			log.Fatal(err)
		}
		if viaReader {
			if _, ok := <-replies; !ok {
				log.Fatal("hotpath: the floor's child closed its socket")
			}
		} else {
			readReply(buf)
		}
		return time.Since(t)
	}
	before := selfCPU()
	start := time.Now()
	lat := timeTrips(n, trip)
	elapsed := time.Since(start)
	driver := selfCPU() - before
	_ = c.Close()
	if err := cmd.Wait(); err != nil {
		log.Fatal(err)
	}
	var childCPU time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		childCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	all := float64(n + warmTrips)
	return trips{latency: lat, perS: all / elapsed.Seconds(),
		driverCPU: float64(driver.Microseconds()) / all, childCPU: float64(childCPU.Microseconds()) / all}
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

// warmTrips is how many round trips run before the timed ones.
const warmTrips = 1000

// timeTrips runs warmTrips trips to warm up, then times n.
func timeTrips(n int, trip func() time.Duration) latency {
	for range warmTrips {
		trip()
	}
	trips := make([]time.Duration, n)
	for i := range trips {
		trips[i] = trip()
	}
	return percentiles(trips)
}

// floor measures and reports the socket floor against the channel one,
// and the same round trip with its reply read by a reader goroutine
// against the socket floor.
func floor(asJSON bool, n int) {
	sock, ch := socketFloor(n, false), channelFloor(n)
	hop := socketFloor(n, true)
	cfg := map[string]any{"round_trips": n, "bytes": 64, "transport": "unix socket pair, two processes", "atoll_version": benchfmt.Version()}
	rec := func(metric string, v float64, unit, base string, bv float64) benchfmt.Record {
		return benchfmt.NewRecord("hotpath", metric, v, unit, base, bv, cfg)
	}
	recs := []benchfmt.Record{
		rec("socket_round_trip_p50_us", sock.p50, "us", "goroutine_channel_round_trip_p50_us", ch.p50),
		rec("socket_round_trip_p99_us", sock.p99, "us", "goroutine_channel_round_trip_p99_us", ch.p99),
		rec("via_reader_round_trip_p50_us", hop.p50, "us", "socket_round_trip_p50_us", sock.p50),
		rec("via_reader_round_trip_p99_us", hop.p99, "us", "socket_round_trip_p99_us", sock.p99),
		rec("via_reader_round_trips_per_s", hop.perS, "1/s", "socket_round_trips_per_s", sock.perS),
		rec("via_reader_driver_cpu_us_per_trip", hop.driverCPU, "us", "socket_driver_cpu_us_per_trip", sock.driverCPU),
		rec("via_reader_child_cpu_us_per_trip", hop.childCPU, "us", "socket_child_cpu_us_per_trip", sock.childCPU),
	}
	emit(asJSON, recs)
}
