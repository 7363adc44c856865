// Package sim is atoll's deterministic simulator: a whole cluster in one
// process, one goroutine at a time, on a simulated clock, network and
// disk, every choice drawn from one seed, so that a failing run replays
// exactly. See the public package sim for its use.
package sim
