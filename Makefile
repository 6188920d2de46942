# agent-sudo build, test and run targets. `make help` lists them.

GO           ?= go
BIN          := bin
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME     ?= 10s
# Go spends most of a fuzz run minimising each new input by default
# (golang/go#48820); a bounded minimisation keeps the run fuzzing.
FUZZMIN      ?= 200x
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X github.com/agent-sudo/agent-sudo/daemon.version=$(VERSION) \
                -X github.com/agent-sudo/agent-sudo/cmd/agent-sudo/cli.version=$(VERSION)

.PHONY: help build test vet staticcheck unit fuzz bench run clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/agent-sudod and bin/agent-sudo
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/agent-sudod ./cmd/agent-sudo

test: vet staticcheck unit ## vet, staticcheck and every test with the race detector

vet: ## go vet
	$(GO) vet ./...

staticcheck: ## staticcheck (installed through the module proxy when missing)
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install $(STATICCHECK)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

unit: ## go test -race ./... (unit and end-to-end)
	$(GO) test -race -count=1 -timeout 15m ./...

fuzz: ## run every fuzz target for FUZZTIME (default 10s) each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) $$pkg; \
	  done; \
	done

bench: ## run the benchmarks (figures go in docs/performance.md)
	$(GO) test -run '^$$' -bench . -benchmem ./...

run: build ## build and start the daemon in the foreground with the terminal approver (dev config in a temp dir)
	scripts/dev-run.sh

clean: ## remove build output
	rm -rf $(BIN)
