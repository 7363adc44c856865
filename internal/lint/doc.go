// Package lint holds atoll's repository rules as tests (lint_test.go), run
// by `go test ./...` like any other test: every package has a package doc
// comment, tests do not sleep, production code does not import "testing",
// and the root package does not depend on cmd/. The package itself has no
// code.
package lint
