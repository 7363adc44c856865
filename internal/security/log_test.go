package security_test

import (
	"io"
	"log/slog"
)

// testLogger discards the gossip's debug chatter.
func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
