package workerconn

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// A worker's socket is non-blocking (Go's netpoller waits for it), so a
// read or write on it returns at once: EAGAIN when there is nothing to
// read or no room. It is made with a raw system call, which skips what
// the runtime does around one that may block (entersyscall: it wakes the
// runtime's monitor thread when that sleeps, a futex wake-up per call on
// an otherwise idle process, about a tenth of a worker's CPU per
// synchronous task). Waiting is left to the netpoller (syscall.RawConn).
//
// Built with the race detector, they go through the syscall package
// instead: its Read and Write tell the detector that what a process
// wrote before a write happens before what a reader does after reading
// it, which a raw call would hide (and tests would report races that are
// not).

// rawRead is read(2) on fd into p.
func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	return rawIO(syscall.SYS_READ, syscall.Read, fd, p)
}

// rawWrite is write(2) of p on fd.
func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	return rawIO(syscall.SYS_WRITE, syscall.Write, fd, p)
}

// rawIO makes system call trap (read or write) on fd and p raw, or
// through call (its syscall package function) in a race build.
func rawIO(trap uintptr, call func(int, []byte) (int, error), fd uintptr, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	if raceBuild {
		return errno(call(int(fd), p))
	}
	n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

// errno is a syscall package result as a raw call's.
func errno(n int, err error) (int, syscall.Errno) {
	if err == nil {
		return n, 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return max(n, 0), e
	}
	return max(n, 0), syscall.EIO
}

// rawConnOf is c's descriptor for raw calls, nil if it has none.
func rawConnOf(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// rawReader reads a socket with rawRead, waiting in the netpoller while
// there is nothing to read; its deadlines are the connection's. One
// goroutine reads it at a time (the connection's reader): the call's
// buffer and results are fields, and the function the netpoller calls is
// made once, so a read allocates nothing (a closure over locals, made per
// read, was about one allocation per pipelined task).
type rawReader struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool // r.once, made once
	p    []byte
	n    int
	rerr error
}

// newRawReader is a rawReader of c, or c itself when it has no
// descriptor (net.Pipe in tests).
func newRawReader(c net.Conn) io.Reader {
	rc := rawConnOf(c)
	if rc == nil {
		return c
	}
	r := &rawReader{rc: rc}
	r.fn = r.once
	return r
}

func (r *rawReader) Read(p []byte) (int, error) {
	r.p, r.n, r.rerr = p, 0, nil
	err := r.rc.Read(r.fn)
	n, rerr := r.n, r.rerr
	r.p, r.rerr = nil, nil
	if err != nil {
		return n, err
	}
	return n, rerr
}

// once reads into r.p: true when done (r.n and r.rerr set), false to
// wait until the socket is readable.
func (r *rawReader) once(fd uintptr) bool {
	for {
		m, e := rawRead(fd, r.p)
		switch e {
		case 0:
			r.n = m
			if m == 0 && len(r.p) > 0 {
				r.rerr = io.EOF
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait until readable
		default:
			r.rerr = e
			return true
		}
	}
}

// rawWriter writes a socket with rawWrite: write waits in the netpoller
// while the socket has no room, tryWrite does not. One goroutine writes a
// connection at a time (the one that set Conn.flushing), so the call's
// buffer and results are fields and the function the netpoller calls is
// made once: a write allocates nothing. Written through net.Conn.Write,
// each write entered the scheduler's system-call path, whose wake-up of
// the sleeping monitor thread cost a driver a futex call per pushed
// batch.
type rawWriter struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool // w.once, made once
	buf  []byte
	n    int
	wait bool
	werr error
}

// newRawWriter is a rawWriter of c, or nil when c has no descriptor
// (net.Pipe in tests).
func newRawWriter(c net.Conn) *rawWriter {
	rc := rawConnOf(c)
	if rc == nil {
		return nil
	}
	w := &rawWriter{rc: rc}
	w.fn = w.once
	return w
}

// write writes buf, all of it when wait is set (waiting for room in the
// netpoller), else what the socket takes now (errWouldBlock for the
// rest). n is what was written.
func (w *rawWriter) write(buf []byte, wait bool) (n int, err error) {
	w.buf, w.n, w.wait, w.werr = buf, 0, wait, nil
	err = w.rc.Write(w.fn)
	n, werr := w.n, w.werr
	w.buf, w.werr = nil, nil
	if err != nil {
		return n, err
	}
	return n, werr
}

// once writes what it can of w.buf past w.n: true when done (all of it,
// or w.werr set), false to wait until the socket has room.
func (w *rawWriter) once(fd uintptr) bool {
	for w.n < len(w.buf) {
		m, e := rawWrite(fd, w.buf[w.n:])
		switch {
		case e == 0 && m > 0:
			w.n += m
		case e == syscall.EINTR:
		case e == 0 || e == syscall.EAGAIN: // no room (a write taking nothing, as if full)
			if w.wait {
				return false
			}
			w.werr = errWouldBlock
			return true
		default:
			w.werr = e
			return true
		}
	}
	return true
}
