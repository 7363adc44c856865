// Package testutil holds the helpers every test package of atoll shares,
// one per need: waiting for a condition (Eventually, EventuallyWithin),
// checking that a test binary leaves no goroutine behind (VerifyNoLeaks),
// capturing what a logger writes (NewLogBuffer), a connected pair of unix
// sockets (SocketPair), and a small real file system that fills up
// (SmallDisk, a tmpfs; root only).
//
// It imports nothing of atoll's, so every package's own tests may use it,
// including those of packages the SDK is built on.
package testutil
