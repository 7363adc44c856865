//go:build invariants || race

package raylet

// invariantsEnabled turns on internal consistency checks (tests run with
// -race, so they are on there); production builds pay nothing.
const invariantsEnabled = true
