# agent-sudo build, test and run targets. `make help` lists them.

GO           ?= go
# The Go release go.mod asks for: `make go-version` (a prerequisite of every
# target that runs Go) says in one line when the go on PATH is older.
GO_WANT      := $(shell sed -n 's/^go //p' go.mod)
BIN          := bin
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME     ?= 10s
# Go spends most of a fuzz run minimising each new input by default
# (golang/go#48820); a bounded minimisation keeps the run fuzzing.
FUZZMIN      ?= 200x
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X github.com/agent-sudo/agent-sudo/internal/version.version=$(VERSION)

# A Debian version must start with a digit: tag v1.2.3 -> 1.2.3, anything else
# (a commit) -> 0.0~git<commit>, which sorts before any release.
DEB_VERSION  ?= $(shell v='$(VERSION)'; case $$v in (v[0-9]*) v=$${v#v};; (*) v=0.0~git$$v;; esac; echo $$v | tr - '~')
# make deb builds for this machine; DEB_ARCHES="amd64 arm64" for both.
DEB_ARCHES   ?= $(shell dpkg --print-architecture 2>/dev/null || $(GO) env GOARCH)
DIST         := dist
# make install: PREFIX for the binaries and docs, DESTDIR to stage into.
PREFIX       ?= /usr/local
DESTDIR      ?=
SYSTEMDUNITDIR ?= /usr/lib/systemd/system
SYSUSERSDIR  ?= /usr/lib/sysusers.d
TMPFILESDIR  ?= /usr/lib/tmpfiles.d
DOCDIR       ?= $(PREFIX)/share/doc/agent-sudo
MANDIR       ?= $(PREFIX)/share/man

.PHONY: go-version model help build test vet staticcheck unit race norace mcp-inspector fuzz bench perf load run clean deb install uninstall systemtest sudo-rs-test arm64-test hosts-test depaware short-unprivileged man agents-test remote-test web-test pictures

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# Go 1.21 and later fetch the release go.mod names through the module proxy
# (GOTOOLCHAIN=auto, their default), so `go env GOVERSION` here is that
# release; an older go, or one with GOTOOLCHAIN=local, is refused in one line.
go-version: ## check that the Go on PATH is at least the one go.mod names (README.md, "Go")
	@have=$$($(GO) env GOVERSION 2>&1) || { \
	  echo "make: agent-sudo needs Go $(GO_WANT) or newer, and '$(GO) env GOVERSION' failed: $$(echo "$$have" | head -1) (README.md, \"Go\", says how to get it)" >&2; exit 1; }; \
	have=$${have#go}; have=$${have%% *}; \
	tc=$$($(GO) env GOTOOLCHAIN 2>/dev/null || true); \
	if [ "$$(printf '%s\n%s\n' '$(GO_WANT)' "$$have" | sort -V | head -1)" != '$(GO_WANT)' ]; then \
	  echo "make: agent-sudo needs Go $(GO_WANT) or newer, and $$(command -v $(GO) || echo $(GO)) is Go $$have$${tc:+ with GOTOOLCHAIN=$$tc} (README.md, \"Go\", says how to get it)" >&2; exit 1; \
	fi

build: go-version ## build bin/agent-sudod and bin/agent-sudo
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/agent-sudod ./cmd/agent-sudo

# The checks and the tests build with -trimpath, as make build does: the
# build cache then keys our packages by their content, not by the
# checkout's directory, so that a fresh clone does not compile everything
# again for vet, staticcheck, -race and without it (docs/performance.md,
# "How long the tests take").
vet staticcheck race norace: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

# One after the other, not side by side: on a 2-core machine the two test
# runs at once cost a third more CPU time and took longer than in turn
# (docs/performance.md, "How long the tests take").
test: ## vet and staticcheck, then every test under -race, then the volume tests without it
	@$(MAKE) --no-print-directory --output-sync=target -j2 vet staticcheck
	@$(MAKE) --no-print-directory race
	@$(MAKE) --no-print-directory norace

# The inspector tag adds the MCP Inspector check (make mcp-inspector), and
# the remote tag the sshd tests (make remote-test), so that vet and
# staticcheck see them too.
vet: go-version ## go vet
	$(GO) vet -tags inspector,remote ./...

staticcheck: go-version ## staticcheck (installed through the module proxy when missing)
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install $(STATICCHECK)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck -tags inspector,remote ./...

unit: ## every test: race, then norace
	@$(MAKE) --no-print-directory race
	@$(MAKE) --no-print-directory norace

# The end-to-end tests mostly wait for processes, so more of them run at
# once than there are cores (-parallel), and three packages' tests at once
# (-p; the default is the number of cores): the console's and the runner's
# spend most of their time waiting for a screen or a process. GORACE spares
# the test binaries the race detector's exit sleep (docs/development.md,
# "How the end-to-end tests stay quick"). The end-to-end tests of several packages
# run agent-sudod and agent-sudo: they are built once, with -race, for all
# of them (daemontest.BinDirEnv).
# go test starts the packages' tests in the order it is given them: the
# longest go first, so that the short ones fill the cores around them
# instead of the longest running alone at the end.
RACE_FIRST := ./internal/console ./daemon ./internal/runner ./cmd/agent-sudo ./cmd/agent-sudo/cli ./approval
RACE_P     ?= 3
race: export GORACE ?= atexit_sleep_ms=0
race: go-version ## go test -race ./... (unit and end-to-end)
	@set -e; bindir=$$(mktemp -d); trap 'rm -rf "$$bindir"' EXIT; \
	echo "$(GO) build -race -o $$bindir/ ./cmd/agent-sudod ./cmd/agent-sudo"; \
	$(GO) build -race -o "$$bindir/" ./cmd/agent-sudod ./cmd/agent-sudo; \
	echo "AGENT_SUDO_TEST_BINDIR=$$bindir $(GO) test -race -count=1 -p $(RACE_P) -parallel 4 -timeout 15m $(RACE_FIRST) ./..."; \
	AGENT_SUDO_TEST_BINDIR="$$bindir" $(GO) test -race -count=1 -p $(RACE_P) -parallel 4 -timeout 15m $(RACE_FIRST) ./...

# The NORACE_TESTS are volume tests: they crunch a large input in one
# goroutine, or push tens of megabytes through the daemon to check a size
# limit whose concurrency other tests check under -race with small inputs.
# Under -race they skip themselves, or their large cases, or shrink
# (testenv.SkipUnderRace, daemon's hostileSize): the race detector
# made them take minutes and could find nothing the other tests do not.
# Here they run at full size without it. docs: TestNoraceList checks that the
# two lists name exactly the tests that call testenv.SkipUnderRace or
# hostileSize, and their packages.
NORACE_TESTS := ^(TestNothingActsWithoutALoneKey|TestRunLargeResponse|TestReadResponseFraming|TestReadLongLine|TestApproverChannelFloodAndHugeGrants|TestE2ERefusedRequestsBounded|TestE2EExecution|TestClientLineLimit)$$
NORACE_PKGS  := ./approval ./internal/console ./client ./proto ./internal/audit ./daemon
norace: go-version ## the NORACE_TESTS, at full size, without -race
	$(GO) test -count=1 -run '$(NORACE_TESTS)' $(NORACE_PKGS)

mcp-inspector: go-version ## run the MCP Inspector (fetched with npm on first use) against agent-sudo mcp; needs root and node >= 20
	$(GO) test -tags inspector -count=1 -run '^TestMCPInspector$$' -v ./cmd/agent-sudo/cli

# The model of the approval core (daemon: TestApprovalModel, a
# rapid state machine): make test runs 100 random sequences of about 30
# steps; this runs MODEL_CHECKS sequences of about MODEL_STEPS.
MODEL_CHECKS ?= 2000
MODEL_STEPS  ?= 100
model: go-version ## the approval core's model, longer than in make test (MODEL_CHECKS sequences of MODEL_STEPS steps, -race)
	$(GO) test -race -count=1 -run '^TestApprovalModel$$' -timeout 60m ./daemon -rapid.checks=$(MODEL_CHECKS) -rapid.steps=$(MODEL_STEPS)

fuzz: go-version ## run every fuzz target for FUZZTIME (default 10s) each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) $$pkg; \
	  done; \
	done

# The daemon is built as it ships (CGO_ENABLED=0, as make build does):
# its resident memory is part of the table.
PERF_ROUNDS  ?= 200
perf: go-version ## print issue 14's figures, each next to its baseline from the same run (root; PERF_ROUNDS round trips each)
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench '^BenchmarkTable$$' -benchtime 1x -timeout 60m ./daemon/ -table.rounds $(PERF_ROUNDS)

bench: perf ## make perf, then every other benchmark (figures go in docs/performance.md)
	$(GO) test -run '^$$' -skip '^BenchmarkTable$$' -bench . -benchmem ./...

# The load runs of docs/performance.md: each run starts a fresh daemon
# (built from this tree, exec = "direct", built-in connection limits) and
# fails if any request is not answered correctly or the daemon's open
# descriptors grow. The CSVs and the plot go to LOAD_OUT.
LOAD_OUT     ?= docs/load
load: ## the load runs of docs/performance.md, as root, about 15 minutes: 1, 8, 64 clients x 3,000 requests and 200 x 10,000, output sizes, pipeline lengths, the plot
	@mkdir -p $(LOAD_OUT)
	$(GO) run ./test/load -clients 1,8,64 -requests 3000 -csv $(LOAD_OUT)/clients.csv
	$(GO) run ./test/load -clients 200 -requests 10000 -csv $(LOAD_OUT)/clients.csv -append
	$(GO) run ./test/load -clients 1,8 -requests 200 -output 1KiB,1MiB,16MiB -csv $(LOAD_OUT)/output.csv
	$(GO) run ./test/load -clients 1 -requests 200 -stages 1,8,32 -csv $(LOAD_OUT)/stages.csv
	$(GO) run ./test/load/plot -in $(LOAD_OUT)/clients.csv -out $(LOAD_OUT)/throughput.png

run: build ## build and start the daemon in the foreground with the terminal approver (dev config in a temp dir)
	scripts/dev-run.sh

clean: ## remove build output
	rm -rf $(BIN) $(DIST)

# The package's config file: config.example.toml with every setting
# commented out (built-in defaults, no rules: a human approves everything).
# packaging/deb_test.go builds it and loads it.
$(DIST)/config.toml: packaging/config.example.toml
	@mkdir -p $(DIST)
	{ printf '%s\n' "# Installed by the agent-sudo package as /etc/agent-sudo/config.toml." \
	  "# Every line below is commented out: the daemon runs on its built-in" \
	  "# defaults with no rules, so a human approves every request. Uncomment and" \
	  "# edit what you need; the full reference is docs/config.md." "#"; \
	  sed -E 's/^([^#[:space:]])/# \1/' $<; } > $@

# The man pages, generated from the help texts and docs/config.md (see
# packaging/mangen), with the date of the last commit so that a rebuild of
# the same commit gives the same pages.
MANDATE      ?= $(shell git log -1 --format=%cs 2>/dev/null || date -u +%F)
MANPAGES     := agent-sudo.1 agent-sudod.8 agent-sudo.toml.5

man: build ## generate the man pages agent-sudo(1), agent-sudod(8), agent-sudo.toml(5) into dist/man
	$(GO) run ./packaging/mangen -agent-sudo $(BIN)/agent-sudo -agent-sudod $(BIN)/agent-sudod \
	  -config-doc docs/config.md -version '$(VERSION)' -date '$(MANDATE)' -out $(DIST)/man
	@for p in $(MANPAGES); do gzip -9nf -k $(DIST)/man/$$p; done

deb: go-version $(DIST)/config.toml man ## build dist/agent-sudo_<version>_<arch>.deb for DEB_ARCHES (this machine's), and dist/agent-sudo.deb, a link to this machine's
	$(GO) -C packaging/debbuild build -o "$(CURDIR)/$(DIST)/debbuild" .
	@# Debian wants a changelog; the git history is the real one.
	{ printf 'agent-sudo (%s) unstable; urgency=medium\n\n  * Built from commit %s; the changes are in its git history.\n\n -- %s  %s\n' \
	  '$(DEB_VERSION)' "$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	  'agent-sudo maintainers <maintainers@users.noreply.a-seed-15863507.example>' \
	  "$$(git log -1 --format=%aD 2>/dev/null || date -R)"; } | gzip -9n > $(DIST)/changelog.gz
	@set -e; for arch in $(DEB_ARCHES); do \
	  echo "== $$arch"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' -o $(DIST)/$$arch/ ./cmd/agent-sudod ./cmd/agent-sudo; \
	  VERSION='$(DEB_VERSION)' GOARCH=$$arch $(DIST)/debbuild \
	    -config packaging/nfpm.yaml -out $(DIST)/agent-sudo_$(DEB_VERSION)_$$arch.deb; \
	  echo "$(DIST)/agent-sudo_$(DEB_VERSION)_$$arch.deb"; \
	done
	@# One name for the package just built for this machine, so that the
	@# install line names exactly one file (docs/install.md).
	@arch=$$(dpkg --print-architecture 2>/dev/null || $(GO) env GOARCH); \
	if [ -f $(DIST)/agent-sudo_$(DEB_VERSION)_$$arch.deb ]; then \
	  ln -sfn agent-sudo_$(DEB_VERSION)_$$arch.deb $(DIST)/agent-sudo.deb; \
	  echo "$(DIST)/agent-sudo.deb -> agent-sudo_$(DEB_VERSION)_$$arch.deb"; \
	fi

# install copies what `make build man` made and runs no Go itself, so that
# `sudo make install` works where root's PATH (sudo's secure_path) has no Go.
MANGZ        := $(foreach p,$(MANPAGES),$(DIST)/man/$(p).gz)
$(BIN)/agent-sudod $(BIN)/agent-sudo &:
	$(MAKE) --no-print-directory build
$(MANGZ) &:
	$(MAKE) --no-print-directory man

install: $(BIN)/agent-sudod $(BIN)/agent-sudo $(DIST)/config.toml $(MANGZ) ## install what `make build man` made into DESTDIR with PREFIX (default /usr/local); the config only if absent
	install -D -m 0755 $(BIN)/agent-sudod $(DESTDIR)$(PREFIX)/bin/agent-sudod
	install -D -m 0755 $(BIN)/agent-sudo $(DESTDIR)$(PREFIX)/bin/agent-sudo
	sed 's#^\(Exec[A-Za-z]*=\)/usr/bin/agent-sudod#\1$(PREFIX)/bin/agent-sudod#' packaging/systemd/agent-sudo.service > $(BIN)/agent-sudo.service
	install -D -m 0644 $(BIN)/agent-sudo.service $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo.service
	install -D -m 0644 packaging/systemd/agent-sudo.socket $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo.socket
	install -D -m 0644 packaging/systemd/agent-sudo-approver.socket $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo-approver.socket
	sed 's#^\(Exec[A-Za-z]*=\)/usr/bin/agent-sudo #\1$(PREFIX)/bin/agent-sudo #' packaging/systemd/agent-sudo-web.service > $(BIN)/agent-sudo-web.service
	install -D -m 0644 $(BIN)/agent-sudo-web.service $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo-web.service
	install -D -m 0644 packaging/sysusers.d/agent-sudo.conf $(DESTDIR)$(SYSUSERSDIR)/agent-sudo.conf
	install -D -m 0644 packaging/tmpfiles.d/agent-sudo.conf $(DESTDIR)$(TMPFILESDIR)/agent-sudo.conf
	install -D -m 0644 packaging/logrotate.d/agent-sudo $(DESTDIR)/etc/logrotate.d/agent-sudo
	@if [ -e $(DESTDIR)/etc/agent-sudo/config.toml ]; then \
	  echo "keeping the existing $(DESTDIR)/etc/agent-sudo/config.toml"; \
	else \
	  install -D -m 0644 $(DIST)/config.toml $(DESTDIR)/etc/agent-sudo/config.toml; \
	fi
	@if [ -e $(DESTDIR)/etc/agent-sudo/web.toml ]; then \
	  echo "keeping the existing $(DESTDIR)/etc/agent-sudo/web.toml"; \
	else \
	  install -D -m 0644 packaging/web.toml $(DESTDIR)/etc/agent-sudo/web.toml; \
	fi
	install -D -m 0644 packaging/deb/copyright $(DESTDIR)$(DOCDIR)/copyright
	install -D -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -D -m 0644 packaging/config.example.toml $(DESTDIR)$(DOCDIR)/examples/config.example.toml
	install -d $(DESTDIR)$(DOCDIR)/docs
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	@set -e; for p in $(MANPAGES); do \
	  install -D -m 0644 $(DIST)/man/$$p.gz $(DESTDIR)$(MANDIR)/man$${p##*.}/$$p.gz; \
	done

uninstall: ## remove what make install installed, except /etc/agent-sudo and /var/log/agent-sudo
	rm -f $(DESTDIR)$(PREFIX)/bin/agent-sudod $(DESTDIR)$(PREFIX)/bin/agent-sudo \
	  $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo.service $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo.socket \
	  $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo-approver.socket $(DESTDIR)$(SYSTEMDUNITDIR)/agent-sudo-web.service \
	  $(DESTDIR)$(SYSUSERSDIR)/agent-sudo.conf $(DESTDIR)$(TMPFILESDIR)/agent-sudo.conf \
	  $(DESTDIR)/etc/logrotate.d/agent-sudo
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(foreach p,$(MANPAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(p).gz)

# test/remote re-executes itself in a network namespace of its own
# (unshare --net), where the sshd servers listen on 127.0.0.1 only.
# The web approver's tunnel tests drive Debian's chromium as make web-test
# does (playwright-core installed by test/web/install.sh).
remote-test: go-version ## one approve console for two daemons over a real sshd, reconnecting; an agent through ssh -R; the web approver and enrolment through docs/remote.md's tunnel in chromium, a local agent squatting (root; openssh-server, tmux, chromium, node, python3)
	@set -e; chromium=$${AGENT_SUDO_TEST_CHROMIUM:-/usr/bin/chromium}; \
	[ -x "$$chromium" ] || { echo "remote-test: $$chromium not found: apt-get install chromium" >&2; exit 1; }; \
	mods=$$(test/web/install.sh); \
	echo "AGENT_SUDO_TEST_NODE_PATH=$$mods AGENT_SUDO_TEST_CHROMIUM=$$chromium $(GO) test -race -tags remote -count=1 -v ./test/remote"; \
	AGENT_SUDO_TEST_NODE_PATH="$$mods" AGENT_SUDO_TEST_CHROMIUM="$$chromium" $(GO) test -race -tags remote -count=1 -v ./test/remote

pictures: go-version ## remake docs/images (README's and docs/approving.md's pictures) from a real run: the console at 80x24 in tmux, the page in chromium at 390x844 (root; tmux, chromium, node)
	@set -e; chromium=$${AGENT_SUDO_TEST_CHROMIUM:-/usr/bin/chromium}; \
	[ -x "$$chromium" ] || { echo "pictures: $$chromium not found: apt-get install chromium" >&2; exit 1; }; \
	mods=$$(test/web/install.sh); \
	AGENT_SUDO_PICTURES=$(CURDIR)/docs/images AGENT_SUDO_TEST_NODE_PATH=$$mods AGENT_SUDO_TEST_CHROMIUM=$$chromium \
	  $(GO) test -count=1 -run '^TestPictures$$' -v ./test/web/

web-test: go-version ## the web approver in Debian's chromium (playwright-core pinned in test/web/package-lock.json, installed with npm ci) with a WebAuthn virtual authenticator, against a real daemon (root; chromium, node)
	test/web/run.sh

agents-test: go-version ## run the real Claude Code and Codex CLI (pinned in test/agents/package-lock.json, installed with npm ci) against agent-sudo mcp and a real daemon
	test/agents/run.sh

# Many hosts, one audit (docs/remote.md): three booted containers, two
# uploading their journals to the third.
hosts-test: ## build the .deb for this machine; two containers with it send their audit entries to a third's systemd-journal-remote (root; see test/system/hosts.sh)
	@set -e; arch=$$(dpkg --print-architecture 2>/dev/null || $(GO) env GOARCH); \
	$(MAKE) --no-print-directory deb DEB_ARCHES=$$arch; \
	test/system/hosts.sh $(DIST)/agent-sudo_$(DEB_VERSION)_$$arch.deb

short-unprivileged: go-version ## go test -short ./... as an unprivileged user (agent-sudo-ci, made when missing) on a copy of the tree; run as root
	scripts/short-unprivileged.sh

depaware: go-version ## rewrite cmd/*/depaware.txt, the packages each binary links (docs: TestDepaware checks them)
	$(GO) test ./docs -run '^TestDepaware$$' -count=1 -update-depaware

# The sudo mode tests on Debian 13 with its sudo and with its sudo-rs as
# /usr/bin/sudo (issue 34): test binaries built here without cgo, run in a
# container of the cached trixie root file system (test/system/sudo-rs.sh).
sudo-rs-test: go-version ## the runner's, the daemon's execution and the shim's tests with exec = "sudo" on Debian 13, with sudo 1.9.16 and with sudo-rs 0.2.5 (root; see test/system/sudo-rs.sh)
	GO='$(GO)' test/system/sudo-rs.sh

# The arm64 package, cross-built, and its binaries run under qemu-user
# (test/system/arm64.sh): --version and --check-config.
arm64-test: ## make deb DEB_ARCHES=arm64, then the arm64 binaries' --version and --check-config under qemu-user (qemu-user-static)
	@$(MAKE) --no-print-directory deb DEB_ARCHES=arm64
	test/system/arm64.sh $(DIST)/agent-sudo_$(DEB_VERSION)_arm64.deb

# The system test installs the package, then upgrades it to the same build
# with a higher version (VERSION.1), as docs/install.md's upgrade says, in a
# booted Debian 12 and then a booted Debian 13 (where it also removes sudo
# and runs a request through sudo-rs); then walks README.md's Go set-ups on
# a fresh Debian 12 and a fresh Debian 13, and make run and make test on the
# latter (test/system/readme-go.sh, which needs Debian's archive and the Go
# module proxy); then the sudo mode tests with sudo and with sudo-rs on
# Debian 13 (make sudo-rs-test).
systemtest: ## build the .deb for this machine and test it in booted Debian 12 and Debian 13 containers; README.md's Go set-ups on fresh ones; make sudo-rs-test (root; see test/system)
	@set -e; arch=$$(dpkg --print-architecture 2>/dev/null || $(GO) env GOARCH); \
	rm -rf $(DIST)/upgrade; rm -f $(DIST)/agent-sudo_*_$$arch.deb; \
	$(MAKE) --no-print-directory deb DEB_ARCHES=$$arch VERSION='$(VERSION).1'; \
	mkdir -p $(DIST)/upgrade; mv $(DIST)/agent-sudo_*_$$arch.deb $(DIST)/upgrade/; \
	$(MAKE) --no-print-directory deb DEB_ARCHES=$$arch; \
	for release in bookworm trixie; do \
	  AGENT_SUDO_SYSTEMTEST_RELEASE=$$release GO='$(GO)' test/system/run.sh \
	    $(DIST)/agent-sudo_$(DEB_VERSION)_$$arch.deb $$(ls $(DIST)/upgrade/agent-sudo_*_$$arch.deb); \
	done; \
	test/system/readme-go.sh; \
	GO='$(GO)' test/system/sudo-rs.sh
