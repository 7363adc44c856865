//go:build !simbugs

package simbugs

// Built reports whether the binary has the bugs (the simbugs tag).
const Built = false

// On reports whether bug b is on: never, without the simbugs tag.
func On(Bug) bool { return false }

// Set turns bug b on or off: nothing without the simbugs tag.
func Set(Bug, bool) {}
