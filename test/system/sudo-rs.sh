#!/usr/bin/env bash
# The sudo mode tests on Debian 13, once with its sudo (1.9.16) and once with
# its sudo-rs (0.2.5) as /usr/bin/sudo: the runner's tests (environment,
# pipelines, exit statuses, timeouts, -u, both modes), the daemon's
# end-to-end execution and timeout tests, and the shim's table against a
# daemon with exec = "sudo" (issue 34). Run through `make sudo-rs-test`.
#
# The test binaries and agent-sudod/agent-sudo are built here, without cgo
# (the container has no Go), and bind-mounted read-only into a container of
# $CACHE/trixie (built once with debootstrap, test/system/lib.sh) that is
# not booted and runs on a throw-away overlay of it (--volatile=overlay), so
# runs do not change it. The source tree is bind-mounted read-only too, for
# the tests' own files. Every part prints "CHECK <what>: ok" or
# "FAIL <what>: why", and its wall time.
#
# Needs root, debootstrap, systemd-nspawn (systemd-container) and Go.
set -euo pipefail

GO=${GO:-go}
CACHE=${AGENT_SUDO_SYSTEMTEST_CACHE:-/var/cache/agent-sudo-systemtest}
MIRROR=${AGENT_SUDO_SYSTEMTEST_MIRROR:-http://deb.debian.org/debian}
start=$(date +%s)

die() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "CHECK $*: ok"; }

[ "$(id -u)" = 0 ] || die "setup: the sudo-rs test needs root"
for t in debootstrap systemd-nspawn; do
	command -v $t >/dev/null || die "setup: $t not found (apt-get install debootstrap systemd-container)"
done
command -v "$GO" >/dev/null || die "setup: $GO not found: the test binaries are built here"
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$repo/test/system/lib.sh"

base_rootfs trixie
rootfs=$CACHE/trixie

work=$(mktemp -d /var/tmp/agent-sudo-sudors.XXXXXX)
trap 'rm -rf "$work"; echo "sudo-rs test wall time: $(($(date +%s) - start))s"' EXIT

t0=$(date +%s)
cd "$repo"
CGO_ENABLED=0 "$GO" build -o "$work/bin/" ./cmd/agent-sudod ./cmd/agent-sudo
for pkg in internal/runner daemon cmd/agent-sudo/cli; do
	CGO_ENABLED=0 "$GO" test -c -o "$work/bin/$(basename "$pkg").test" "./$pkg"
done
ok "test binaries built without cgo ($(($(date +%s) - t0))s)"

# The tests each run covers: all of the runner's (each behaviour in both
# modes); the daemon's execution tests with exec = "sudo" (the sudo
# subtests; the timeout test through AGENT_SUDO_TEST_EXEC); the shim's
# table against a daemon with exec = "sudo".
runner_tests='.'
daemon_tests='^(TestE2EExecution|TestE2ECommandTimeout|TestE2ESudoModeRefusesReplaceableProgram|TestE2EChildFDs|TestE2EClientDisconnectDuringRunFinishes)$'
cli_tests='^(TestShimE2E|TestShimEnvAllowFollowsTheDaemon)$'

# incontainer SUDO runs the three test binaries in a fresh overlay of the
# root file system, with /usr/bin/sudo being Debian's sudo or sudo-rs.
incontainer() {
	# sudo looks its host name up and says so on every stage's stderr
	# when it cannot.
	local impl=$1 setup='echo "127.0.1.1 agent-sudo-test" >>/etc/hosts'
	[ "$impl" = sudo-rs ] && setup="$setup; ln -sfn /usr/lib/cargo/bin/sudo /usr/bin/sudo"
	timeout --kill-after=30s 15m systemd-nspawn -q -D "$rootfs" --volatile=overlay --register=no --keep-unit \
		--private-network --hostname=agent-sudo-test \
		--bind-ro="$work/bin":/t --bind-ro="$repo":/src \
		--setenv=AGENT_SUDO_TEST_BINDIR=/t --setenv=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		sh -euc '
			'"$setup"'
			printf "sudo here: %s\n" "$(sudo --version 2>&1 | head -1)"
			cd /src/internal/runner && /t/runner.test -test.count=1 -test.timeout=10m -test.run "$1"
			cd /src/daemon && /t/daemon.test -test.count=1 -test.timeout=10m -test.run "$2"
			cd /src/daemon && AGENT_SUDO_TEST_EXEC=sudo /t/daemon.test -test.count=1 -test.timeout=10m -test.run "^TestE2ECommandTimeout\$"
			cd /src/cmd/agent-sudo/cli && AGENT_SUDO_TEST_EXEC=sudo /t/cli.test -test.count=1 -test.timeout=10m -test.run "$3"
		' sh "$runner_tests" "$daemon_tests" "$cli_tests"
}

for impl in sudo sudo-rs; do
	t0=$(date +%s)
	if ! incontainer "$impl" >"$work/$impl.out" 2>&1; then
		grep -E -A8 -- '^(--- |    --- )?FAIL' "$work/$impl.out" | head -80 >&2 || tail -40 "$work/$impl.out" >&2
		cp "$work/$impl.out" "/var/tmp/agent-sudo-sudors-$impl.log"
		die "$impl: the sudo mode tests failed in the Debian 13 container (above: the failures; all of the output is in /var/tmp/agent-sudo-sudors-$impl.log)"
	fi
	grep '^sudo here:' "$work/$impl.out" || true
	ok "$impl: the runner's, the daemon's execution and the shim's tests pass with exec = \"sudo\" ($(($(date +%s) - t0))s)"
done
