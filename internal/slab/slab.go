// Package slab makes small records in runs: one allocation holds up to
// MaxPerRun records of one type (and at most about RunBytes), handed out
// one at a time, so that a record made for every task costs a fraction
// of an allocation.
//
// The Go collector frees a run only once none of its records is
// reachable, and while a run is reachable it keeps alive everything any
// of its records points to, the dead ones' too. A slab is therefore only
// for records whose lives end close together: a task's records kept
// from its submission or its push to its result (the submitter's queued
// task and its push, the decoded result), never a record a caller may
// hold for as long as it likes (a ref, an object's value). A record that
// lives long, a task running for hours among short ones, keeps its run
// and what the run's other records point to (their tasks' specs, with
// their inline arguments): that is why a run is small, so that each such
// record keeps at most MaxPerRun-1 others.
//
// A record is zero when handed out and never handed out twice: the slab
// makes fresh runs and reuses nothing, so a record may be read by anyone
// still holding it, however late (unlike a pool's).
package slab

import "unsafe"

// RunBytes bounds the size of one run of small records: 4 KiB, a size
// class of the Go allocator. MaxPerRun bounds the records in one run.
const (
	RunBytes  = 4096
	MaxPerRun = 16
)

// Of hands out records of type T. Its zero value is ready to use; it is
// not safe for concurrent use (its owner's mutex, or one goroutine,
// guards it).
type Of[T any] struct {
	run []T
}

// PerRun is how many records of type T one run holds: MaxPerRun, or as
// many as fit in RunBytes if fewer, at least one.
func PerRun[T any]() int {
	var zero T
	return min(MaxPerRun, max(1, RunBytes/max(1, int(unsafe.Sizeof(zero)))))
}

// New returns a zero record of type T, from the current run or a fresh
// one.
func (s *Of[T]) New() *T {
	if len(s.run) == 0 {
		s.run = make([]T, PerRun[T]())
	}
	p := &s.run[0]
	s.run = s.run[1:]
	return p
}
