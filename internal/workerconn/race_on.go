//go:build race

package workerconn

// raceBuild: built with the race detector (see rawRead).
const raceBuild = true
