package remote

import (
	"encoding/binary"
	"io"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// ChunkSize is the unit in which object bytes are written and read.
const ChunkSize = 4 << 20

const (
	opPull byte = 1

	statusOK       byte = 0
	statusNotFound byte = 1
	statusError    byte = 2

	requestLen = 1 + ids.ObjectIDLen
	replyLen   = 1 + 8

	// maxMessageLen bounds an error message so a corrupt reply cannot
	// make the client allocate without limit.
	maxMessageLen = 64 << 10
)

func encodeRequest(id ids.ObjectID) [requestLen]byte {
	var b [requestLen]byte
	b[0] = opPull
	copy(b[1:], id[:])
	return b
}

func encodeReply(status byte, n uint64) [replyLen]byte {
	var b [replyLen]byte
	b[0] = status
	binary.BigEndian.PutUint64(b[1:], n)
	return b
}

func readReply(r io.Reader) (status byte, n uint64, err error) {
	var b [replyLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, err
	}
	return b[0], binary.BigEndian.Uint64(b[1:]), nil
}
