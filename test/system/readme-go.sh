#!/usr/bin/env bash
# System test of README.md's "Go" set-up: on a fresh Debian 13 and a fresh
# Debian 12, the README's commands for each get a Go that builds agent-sudo,
# and with Debian 12's own Go (1.19) make says in one line what is wrong; on
# the Debian 13 one, README.md's make run (with its try-it) and make test
# then pass. Run by `make systemtest` after test/system/run.sh; alone:
# test/system/readme-go.sh (as root, from any directory of the checkout).
#
# The README's blocks are marked <!-- systemtest: go-debian13 --> and
# <!-- systemtest: go-debian12 --> and run word for word, as a user with
# sudo, in a copy of HEAD (git archive) in a fresh copy of the root file
# system run.sh builds with debootstrap for that release ($CACHE, default
# /var/cache/agent-sudo-systemtest). It needs Debian's archive and the Go
# module proxy, so the container shares this machine's network (no
# --private-network, and not booted: systemd-nspawn runs each step as a
# command); this machine's apt proxy, Go proxy and certificate authorities
# are passed in. The whole run is bounded by
# AGENT_SUDO_SYSTEMTEST_README_TIMEOUT seconds (default 1800; each container
# run is killed when it would end later), and the copies are removed on
# exit. The packages apt downloads are kept in $CACHE/archives for the next
# run (bind-mounted as the containers' apt cache); Go and its modules are
# fetched afresh each time, as on a fresh machine. Every check prints
# "CHECK <what>: ok (at <seconds since the start>)" or "FAIL <what>: why", and
# the script exits non-zero on the first failure.
set -euo pipefail

CACHE=${AGENT_SUDO_SYSTEMTEST_CACHE:-/var/cache/agent-sudo-systemtest}
MIRROR=${AGENT_SUDO_SYSTEMTEST_MIRROR:-http://deb.debian.org/debian}
start=$(date +%s)
deadline=$((start + ${AGENT_SUDO_SYSTEMTEST_README_TIMEOUT:-1800}))

die() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "CHECK $*: ok (at $(($(date +%s) - start))s)"; }

[ "$(id -u)" = 0 ] || die "setup: the README's Go test needs root"
for t in debootstrap systemd-nspawn git timeout; do
	command -v $t >/dev/null || die "setup: $t not found (apt-get install debootstrap systemd-container git)"
done
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$repo/test/system/lib.sh"

# readme NAME prints the commands of README.md's block marked
# <!-- systemtest: NAME --> (the same markers as docs/install.md's).
readme() { block "$repo/README.md" systemtest "$1"; }
want=$(sed -n 's/^go //p' "$repo/go.mod")
[ -n "$want" ] || die "setup: go.mod names no Go release"

# The same root file systems as run.sh's (lib.sh).
base_rootfs bookworm
base_rootfs trixie

mkdir -p "$CACHE/archives/partial"
work=$(mktemp -d /var/tmp/agent-sudo-readme-go.XXXXXX)
cleanup() {
	rm -rf "$work"
	echo "README Go test wall time: $(($(date +%s) - start))s"
}
trap cleanup EXIT

# This machine's network settings, for the container: apt's proxies (none
# means direct), the proxy environment, the Go proxy and checksum database
# the Go here uses (GOTOOLCHAIN and GOFLAGS are not passed: the README's Go
# runs with its own defaults), and the certificate authorities this machine
# trusts (a network that inspects TLS has one of its own), as SSL_CERT_FILE,
# which Go reads: the README's apt-get installs the container's own.
aptproxy=$(apt-config dump 2>/dev/null | grep -iE '^Acquire::(http|https|ftp)::Proxy' || true)
cafile=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
envs=()
[ -f "$cafile" ] && envs+=(--setenv=SSL_CERT_FILE=/etc/ssl/host-ca-certificates.crt)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
	[ -n "${!v:-}" ] && envs+=(--setenv="$v=${!v}")
done
if command -v go >/dev/null; then
	for v in GOPROXY GOSUMDB GONOSUMDB GOPRIVATE; do
		val=$(go env "$v" 2>/dev/null || true)
		[ -n "$val" ] && envs+=(--setenv="$v=$val")
	done
fi

# fresh NAME RELEASE: a copy of the release's root file system with HEAD's
# tree in /home/dev/src and a user dev who may run anything with sudo, as
# the README's reader.
fresh() {
	local root=$work/$1
	cp -a "$CACHE/$2" "$root"
	if [ -n "$aptproxy" ]; then
		printf '%s\n' "$aptproxy" >"$root/etc/apt/apt.conf.d/90host-proxy"
	fi
	if [ -f "$cafile" ]; then
		mkdir -p "$root/etc/ssl"
		cp "$cafile" "$root/etc/ssl/host-ca-certificates.crt"
	fi
	# sudo looks up the host name; the container has this machine's network
	# and the name of its directory.
	echo "127.0.1.1 $1" >>"$root/etc/hosts"
	local t
	t=$(left)
	timeout --kill-after=30s "$t" systemd-nspawn -q -D "$root" --register=no --keep-unit --bind="$CACHE/archives":/var/cache/apt/archives --hostname="$1" sh -euc '
		useradd -m -s /bin/bash dev
		echo "dev ALL=(ALL) NOPASSWD: ALL" >/etc/sudoers.d/dev
		chmod 0440 /etc/sudoers.d/dev' >"$work/$1.log" 2>&1 || die "setup: the user dev in $1: $(tail -5 "$work/$1.log")"
	mkdir -p "$root/home/dev/src"
	git -C "$repo" archive HEAD | tar -C "$root/home/dev/src" -xf -
	chown -R --reference="$root/home/dev" "$root/home/dev/src"
}
# left prints the time left before the deadline, for timeout; none left is
# a failure.
left() {
	local n=$((deadline - $(date +%s)))
	[ $n -gt 0 ] || die "timeout: the README's Go test took more than ${AGENT_SUDO_SYSTEMTEST_README_TIMEOUT:-1800}s"
	echo "${n}s"
}
# run_in NAME SCRIPT: runs SCRIPT with sh -eu as dev in /home/dev/src of
# the container NAME, with this machine's network, until the deadline at
# most; SCRIPT's output goes to $work/NAME.out (kept apart from what
# systemd-nspawn itself says, in $work/NAME.nspawn), and its exit status is
# run_in's (125 when it could not be run or did not finish).
run_in() {
	local name=$1 root=$work/$1 t
	t=$(left) || return 125
	rm -f "$root/home/dev/.out" "$root/home/dev/.rc"
	timeout --kill-after=30s "$t" systemd-nspawn -q -D "$root" --register=no --keep-unit --bind="$CACHE/archives":/var/cache/apt/archives --hostname="$name" \
		--user=dev --chdir=/home/dev/src "${envs[@]}" \
		sh -c 'rc=0; sh -euc "$1" >/home/dev/.out 2>&1 || rc=$?; echo $rc >/home/dev/.rc' sh "$2" >"$work/$name.nspawn" 2>&1 || true
	cp "$root/home/dev/.out" "$work/$name.out" 2>/dev/null || : >"$work/$name.out"
	[ -s "$root/home/dev/.rc" ] || { echo "systemd-nspawn: $(tail -3 "$work/$name.nspawn")" >>"$work/$name.out"; return 125; }
	return "$(cat "$root/home/dev/.rc")"
}

# --- Debian's own Go: make says what is wrong in one line ---------------------
fresh debian-go bookworm
# As root: dev's sudo would do the same.
t=$(left)
timeout --kill-after=30s "$t" systemd-nspawn -q -D "$work/debian-go" --register=no --keep-unit --bind="$CACHE/archives":/var/cache/apt/archives --hostname=debian-go "${envs[@]}" \
	sh -euc 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go' >"$work/debian-go.log" 2>&1 ||
	die "debian's go: apt-get install golang-go: $(tail -5 "$work/debian-go.log")"
run_in debian-go 'go version' || die "debian's go: go version failed: $(cat "$work/debian-go.out")"
have=$(cat "$work/debian-go.out")
case $have in "go version go1.19"*) ;; *) die "debian's go: Debian 12's golang-go is '$have', the README says 1.19" ;; esac
set +e
run_in debian-go 'make build'
rc=$?
set -e
out=$(cat "$work/debian-go.out")
[ $rc != 0 ] || die "debian's go: make build with $have succeeded: $out"
[ $rc != 125 ] || die "debian's go: make build did not run, or not in time: $out"
msg=$(printf '%s\n' "$out" | grep -v '^make: \*\*\* ' || true)
case $msg in
"make: agent-sudo needs Go $want or newer, and /usr/bin/go is Go 1.19"*'(README.md, "Go", says how to get it)') ;;
*) die "debian's go: make build said, besides make's own error line: $out" ;;
esac
[ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || die "debian's go: make build said more than one line: $out"
ok "with Debian 12's $have, make build exits $rc saying: $msg"
rm -rf "${work:?}/debian-go"

# --- README.md's Go set-ups, word for word -------------------------------------
# Debian 12's: the Go set-up and make build, on a fresh Debian 12.
fresh readme12 bookworm
run_in readme12 "$(readme go-debian12)" || die "readme, Debian 12: the README's Go set-up failed: $(tail -5 "$work/readme12.out")"
have=$(grep '^go version ' "$work/readme12.out" | tail -1 || true)
case $have in "go version go$want "*) ;; *) die "readme, Debian 12: after the README's set-up, go version in the source tree says '$have', want go$want" ;; esac
ok "README.md's Go set-up for Debian 12 ($(readme go-debian12 | grep -c .) commands) as a user with sudo: $have"
run_in readme12 'make build' || die "readme, Debian 12: make build failed: $(tail -5 "$work/readme12.out")"
ok "make build after the README's set-up on Debian 12"
rm -rf "${work:?}/readme12"

# Debian 13's: the Go set-up, make build, then make run and make test below.
fresh readme trixie
run_in readme "$(readme go-debian13)" || die "readme, Debian 13: the README's Go set-up failed: $(tail -5 "$work/readme.out")"
have=$(grep '^go version ' "$work/readme.out" | tail -1 || true)
case $have in "go version go$want "*) ;; *) die "readme, Debian 13: after the README's set-up, go version in the source tree says '$have', want go$want" ;; esac
ok "README.md's Go set-up for Debian 13 ($(readme go-debian13 | grep -c .) commands) as a user with sudo: $have"
run_in readme 'make build' || die "readme, Debian 13: make build failed: $(tail -5 "$work/readme.out")"
ok "make build after the README's set-up on Debian 13"
run_in readme 'bin/agent-sudo --version && bin/agent-sudod --version' || die "readme: the binaries make build made do not run: $(cat "$work/readme.out")"
out=$(cat "$work/readme.out")
case $out in "agent-sudo "*"agent-sudod "*) ;; *) die "readme: the binaries' --version said: $out" ;; esac
ok "the binaries run: $(echo $out)"

# --- README.md's two commands: make run (with its try-it) and make test ------
# make run in tmux at 80x24, as the README's reader at a terminal; the
# README's try-it block word for word from a second "terminal": its first
# command waits on the console, which allows it (a, once the key guard has
# ended), its second is allowed by the dev config's rule; then q, with
# nothing waiting, stops the daemon at once, which removes bin/dev.sock. Every wait is bounded (300
# polls 0.2 s apart) and a key the console discarded is pressed again, at
# most five times, as internal/consoletest does.
try=$(readme try)
printf '%s\n' "$try" | sed -n 1p >"$work/readme/home/dev/try1.sh"
printf '%s\n' "$try" | sed -n 2p >"$work/readme/home/dev/try2.sh"
run_in readme "$(cat <<SCRIPT
screen() { tmux capture-pane -p -t run; }
wait_for() { i=0; until screen | grep -qF -- "\$1"; do i=\$((i+1)); if [ \$i -gt 300 ]; then echo "the screen never showed: \$1"; screen; exit 1; fi; sleep 0.2; done; }
wait_gone() { i=0; while screen | grep -qF -- "\$1"; do i=\$((i+1)); if [ \$i -gt 300 ]; then echo "the screen kept showing: \$1"; screen; exit 1; fi; sleep 0.2; done; }
press() { n=0; while [ \$n -lt 5 ]; do n=\$((n+1)); wait_gone "keys enabled in"; sleep 0.3; tmux send-keys -t run "\$1"; i=0; while [ \$i -lt 25 ]; do i=\$((i+1)); if screen | grep -qF -- "\$2"; then return 0; fi; sleep 0.2; done; done; echo "after \$1 five times the screen never showed: \$2"; screen; exit 1; }
tmux new-session -d -s run -x 80 -y 24 'make run; echo "make run exited with status \$?"; sleep 600'
wait_for "agent-sudo approve"
sh /home/dev/try1.sh >/home/dev/try1.out 2>&1 &
wait_for "touch /tmp/agent-sudo-was-here"
press a "was allowed by console"
wait \$! || { echo "the README's first try-it command failed:"; cat /home/dev/try1.out; exit 1; }
test -e /tmp/agent-sudo-was-here || { echo "/tmp/agent-sudo-was-here was not made"; exit 1; }
sh /home/dev/try2.sh >/home/dev/try2.out 2>&1 || { echo "the README's second try-it command failed:"; cat /home/dev/try2.out; exit 1; }
grep -q "uid=0(root)" /home/dev/try2.out || { echo "id through the daemon said:"; cat /home/dev/try2.out; exit 1; }
press q "make run exited with status 0"
test ! -e bin/dev.sock || { echo "bin/dev.sock is left after make run stopped"; exit 1; }
tmux kill-server
SCRIPT
)" || die "readme: make run and the README's try-it: $(tail -30 "$work/readme.out")"
ok "make run in tmux at 80x24: the README's try-it allowed at the console, id allowed by the rule, q stops it and removes bin/dev.sock"
# make test as the README's reader types it (not root: the end-to-end tests
# that need root skip themselves, saying why).
run_in readme 'make test' || die "readme: make test failed: $(tail -30 "$work/readme.out")"
ok "make test as a user after the README's set-up: $(grep -c '^ok ' "$work/readme.out") packages ok"
echo "PASS README Go test"
