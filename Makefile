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

.PHONY: help run test soak lint fuzz bench sim sim-bugs proto tidy

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-6s %s\n", $$1, $$2}'

run: ## run the quickstart sample
	$(GO) run ./samples/quickstart

# Every package's tests with the race detector: the test binaries are
# built at once, then run one package at a time (scripts/test-race.sh says
# why). PKGS narrows it, e.g. make test PKGS=./internal/raylet/...
PKGS ?= ./...
test: ## run every test with the race detector
	GO=$(GO) scripts/test-race.sh $(PKGS)

# Long runs that `make test` (and CI) leave out: a node serving 2000
# driver jobs in a row must not grow (about 45 minutes), the chaos
# sample's fault plan over a longer run, and the simulator over 10,000
# seeds past CI's (about 10 minutes on 2 cores).
soak: ## run the long soaks (not in CI; about an hour)
	ATOLL_LONG_JOBS=2000 $(GO) test -race -count=1 -timeout 90m -run '^TestLongLivedNode$$' -v .
	$(GO) run ./samples/chaos -duration 5m -max-duration 10m
	$(MAKE) sim SIM_SEEDS=10000 SIM_FLAGS='-first 10000'

lint: ## gofmt, go vet and staticcheck
	@unformatted=$$(for d in $$($(GO) list -e -f '{{.Dir}}' ./...); do gofmt -l $$d/*.go; done); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fuzz: ## run every fuzz target for FUZZTIME (10s)
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZFLAGS='$(FUZZFLAGS)' scripts/fuzz.sh

# The deterministic simulator (package sim): SIM_SEEDS seeds of each of
# SIM_WORKLOADS (the mixed workload, streaming generators, placement
# groups) on a simulated 5-node cluster under seeded faults, in
# parallel; a failing seed prints the command that replays it.
SIM_SEEDS ?= 100
SIM_FLAGS ?=
SIM_WORKLOADS ?= mixed streams groups
sim: ## run SIM_SEEDS (100) seeds of each of the simulator's stock workloads
	$(GO) build -o $(BIN)/atoll ./cmd/atoll
	for w in $(SIM_WORKLOADS); do $(BIN)/atoll sim -workload $$w -seeds $(SIM_SEEDS) $(SIM_FLAGS) || exit 1; done

# Bugs put into the cores on purpose (build tag simbugs, internal/simbugs):
# the simulator must find each within 100 seeds and shrink it to at most
# five faults; each prints the command that replays it.
sim-bugs: ## find and shrink the simulator's seeded bugs
	$(GO) test -tags simbugs -count=1 -run TestSeededBugs -v ./sim

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
