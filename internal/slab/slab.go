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
// The slab itself holds its current run only weakly: a slab that makes
// no more records keeps nothing alive once the records it made are dead.
// A run costs two allocations (its records, and its weak pointer's
// handle).
//
// A record is zero when handed out and never handed out twice: the slab
// makes fresh runs and reuses nothing, so a record may be read by anyone
// still holding it, however late (unlike a pool's).
package slab

import (
	"unsafe"
	"weak"
)

// RunBytes bounds the size of one run of small records: 4 KiB, a size
// class of the Go allocator. MaxPerRun bounds the records in one run.
const (
	RunBytes  = 4096
	MaxPerRun = 16
)

// Of hands out records of type T. Its zero value is ready to use; it is
// not safe for concurrent use (its owner's mutex, or one goroutine,
// guards it).
//
// It holds its current run by a weak pointer, so that the run goes once
// every record handed out from it is unreachable, even if records of it
// remain to be handed out: a slab that makes no more records (a quiet
// connection, an actor no longer called) keeps none of the dead ones'
// referents alive.
type Of[T any] struct {
	run weak.Pointer[T] // the current run's first record
	// next is the index in the run of the record New hands out next, n
	// the run's length.
	next, n int
}

// PerRun is how many records of type T one run holds: MaxPerRun, or as
// many as fit in RunBytes if fewer, at least one.
func PerRun[T any]() int {
	var zero T
	return min(MaxPerRun, max(1, RunBytes/max(1, int(unsafe.Sizeof(zero)))))
}

// New returns a zero record of type T, from the current run if it is
// still in use, or from a fresh one.
func (s *Of[T]) New() *T {
	size := unsafe.Sizeof(*new(T))
	if size == 0 {
		return new(T)
	}
	if s.next < s.n {
		if first := s.run.Value(); first != nil {
			p := (*T)(unsafe.Add(unsafe.Pointer(first), uintptr(s.next)*size))
			s.next++
			return p
		}
	}
	run := make([]T, PerRun[T]())
	s.run, s.next, s.n = weak.Make(&run[0]), 1, len(run)
	return &run[0]
}
