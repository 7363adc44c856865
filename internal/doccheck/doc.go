// Package doccheck tests the user documentation against the code: the
// README's recipe for using atoll from another module is run as written
// (a new module, the first program, a job submitted to a cluster started
// with the CLI), every complete Go program in the README and the guides
// under docs/ is built, and every other Go snippet must parse. It has no
// non-test code.
package doccheck
