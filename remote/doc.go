// Package remote will carry node-to-node traffic: control messages
// between raylets and pull-based, chunked object transfer straight into
// the receiving node's arena. atoll runs on one node today (see
// ARCHITECTURE.md), so the package holds only the transport contract that
// the multi-node work will implement.
package remote

import (
	"context"
	"io"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// ObjectSource serves the bytes of objects held on a node.
type ObjectSource interface {
	// Open returns a reader over object id's bytes and its size, or an
	// error matching errs.ErrNotFound if the node does not hold it.
	Open(ctx context.Context, id ids.ObjectID) (r io.ReadCloser, size uint64, err error)
}
