package remote

import (
	"bufio"
	"net"
)

// batchBufferSize is how many bytes of TLS records a batchConn gathers
// into one write (and reads at once): 32 full records.
const batchBufferSize = 512 << 10

// batchConn is the connection under a tls.Conn: crypto/tls writes every
// 16 KiB record with its own write and reads about a record per read, so
// a 4 MiB chunk costs hundreds of system calls each way, which cost more
// than the encryption. batchConn gathers writes until its buffer is full
// or the connection is next read from (every exchange here writes, then
// reads the answer: a request and its reply, the handshakes), and reads
// through a buffer as large.
type batchConn struct {
	net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func newBatchConn(c net.Conn) *batchConn {
	return &batchConn{Conn: c, r: bufio.NewReaderSize(c, batchBufferSize), w: bufio.NewWriterSize(c, batchBufferSize)}
}

// Read sends what was written first: the peer answers only once it has
// it.
func (b *batchConn) Read(p []byte) (int, error) {
	if b.w.Buffered() > 0 {
		if err := b.w.Flush(); err != nil {
			return 0, err
		}
	}
	return b.r.Read(p)
}

func (b *batchConn) Write(p []byte) (int, error) { return b.w.Write(p) }

// Flush sends what was written.
func (b *batchConn) Flush() error { return b.w.Flush() }
