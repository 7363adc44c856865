//go:build !(invariants || race)

package raylet

const invariantsEnabled = false
