package testutil

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// SocketPair is a connected pair of unix stream sockets, as between a
// raylet and a worker process (whose connection is such a pair, not an
// in-memory pipe: its writes do not wait for the reader while the
// socket's buffer has room). Both ends are closed when the test ends.
func SocketPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return conn(fds[0]), conn(fds[1])
}
