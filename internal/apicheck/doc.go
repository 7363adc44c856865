// Package apicheck tests what the compiler says when the SDK is misused:
// an argument of the wrong type, a plain value where an Arg is wanted, an
// option of one kind of call passed to another. Each case is a small
// package under testdata that must fail to build with the message the
// README documents. The package itself has no code.
package apicheck
