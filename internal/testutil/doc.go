// Package testutil holds the helpers every test package of atoll shares,
// one per need: waiting for a condition (Eventually, EventuallyWithin),
// whether a channel is closed yet (Closed),
// checking that a test binary leaves no goroutine behind (VerifyNoLeaks),
// capturing what a logger writes (NewLogBuffer), a connected pair of unix
// sockets (SocketPair), a small real file system that fills up
// (SmallDisk, a tmpfs; root only), and test data whose misplaced bytes
// show (Pattern, with its checksum ByteSum).
//
// It imports nothing of atoll's, so every package's own tests may use it,
// including those of packages the SDK is built on.
package testutil
