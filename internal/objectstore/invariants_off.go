//go:build !invariants && !race

package objectstore

// invariantsEnabled is off in production builds: misuse returns errors and
// the consistency checks cost nothing.
const invariantsEnabled = false
