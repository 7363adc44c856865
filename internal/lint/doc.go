// Package lint holds atoll's repository rules as tests (lint_test.go), run
// by `go test ./...` like any other test: every package has a package doc
// comment, tests do not sleep, production code does not import "testing",
// the root package does not depend on cmd/, ARCHITECTURE.md's package
// table lists every package `go list ./...` prints and nothing else
// (packages_test.go), and what a program registers by name lives in
// internal/registry, not in a package's own map under a mutex
// (registry_test.go). The package itself has no code.
package lint
