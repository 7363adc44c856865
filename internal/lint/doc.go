// Package lint holds atoll's repository rules as tests (lint_test.go), run
// by `go test ./...` like any other test: every package has a package doc
// comment, tests do not sleep, production code does not import "testing",
// the root package does not depend on cmd/, and ARCHITECTURE.md's package
// table lists every package `go list ./...` prints and nothing else
// (packages_test.go). The package itself has no code.
package lint
