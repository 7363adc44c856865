//go:build invariants || race

package objectstore

// invariantsEnabled turns on the Store's consistency checks after every
// operation and turns misuse (double free, release of a pin not held) into
// panics. It is on under the "invariants" build tag and under -race.
const invariantsEnabled = true
