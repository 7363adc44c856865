# atoll — common tasks. `make` (or `make help`) lists them.

GO ?= go
MODULE := github.com/atoll-runtime/atoll
BIN := $(CURDIR)/bin

# staticcheck 2026.2.2 (module v0.8.2) is built with and supports Go 1.26.
STATICCHECK_VERSION := v0.8.2
# Must match the protoc-gen-go version in the headers of atollpb/*.pb.go.
PROTOC_GEN_GO_VERSION := v1.36.12

.DEFAULT_GOAL := help
# How long `make fuzz` runs each fuzz target, and extra flags for it
# (e.g. FUZZFLAGS=-parallel=1 on a shared machine).
FUZZTIME ?= 10s
FUZZFLAGS ?=

.PHONY: help run test soak lint fuzz bench proto tidy

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-6s %s\n", $$1, $$2}'

run: ## run the quickstart sample
	$(GO) run ./samples/quickstart

# Two steps. First every test binary is compiled, with the race detector,
# as many at once as there are cores (-run '^$$' runs no test): compiling
# is most of a clean run's time, and `go test -p 1` would compile one
# package at a time too. Then the tests run, -p 1: one package at a time.
# Many start clusters of node processes with failure timeouts of seconds;
# two such packages at once on a 2-core machine starve each other's gossip,
# and a live node is then declared dead (a flake, not a finding).
test: ## run every test with the race detector
	@echo "compiling the test binaries"
	@$(GO) test -race -count=1 -run '^$$' ./... >/dev/null || $(GO) test -race -count=1 -run '^$$' ./...
	$(GO) test -race -count=1 -p 1 -timeout 30m ./...

# Long runs that `make test` (and CI) leave out: a node serving 2000
# driver jobs in a row must not grow (about 45 minutes), and the chaos
# sample's fault plan over a longer run.
soak: ## run the long soaks (not in CI; about an hour)
	ATOLL_LONG_JOBS=2000 $(GO) test -race -count=1 -timeout 90m -run '^TestLongLivedNode$$' -v .
	$(GO) run ./samples/chaos -duration 5m -max-duration 10m

lint: ## gofmt, go vet and staticcheck
	@unformatted=$$(for d in $$($(GO) list -e -f '{{.Dir}}' ./...); do gofmt -l $$d/*.go; done); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# -fuzz takes one target per package run: one line per target.
fuzz: ## run each fuzz target for FUZZTIME (10s)
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/codec
	$(GO) test -run='^$$' -fuzz='^FuzzRoundTrip$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/codec
	$(GO) test -run='^$$' -fuzz='^FuzzReadIndex$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/objectstore/spill
	$(GO) test -run='^$$' -fuzz='^FuzzReadFrame$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/workerconn
	$(GO) test -run='^$$' -fuzz='^FuzzConn$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/workerconn
	$(GO) test -run='^$$' -fuzz='^FuzzGatewayMessages$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/cluster
	$(GO) test -run='^$$' -fuzz='^FuzzRequests$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/gcs
	$(GO) test -run='^$$' -fuzz='^FuzzPullReply$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/remote
	$(GO) test -run='^$$' -fuzz='^FuzzServerHandshake$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./internal/remote
	$(GO) test -run='^$$' -fuzz='^FuzzStartParsers$$' -fuzztime=$(FUZZTIME) $(FUZZFLAGS) ./cmd/atoll

bench: ## run the Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

proto: ## regenerate atollpb/*.pb.go from atollpb/*.proto
	@if ! command -v protoc >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y protobuf-compiler; \
		else \
			echo "protoc not found: install it with 'sudo apt-get install protobuf-compiler'" >&2; exit 1; \
		fi; \
	fi
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	PATH="$(BIN):$$PATH" protoc --go_out=. --go_opt=module=$(MODULE) -I . atollpb/*.proto

tidy: ## go mod tidy
	$(GO) mod tidy
