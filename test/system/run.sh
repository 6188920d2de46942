#!/usr/bin/env bash
# System test: install the .deb in a booted Debian 12 container under a real
# systemd and check the package, the units and the daemon there. Run through
# `make systemtest` (which builds the package): test/system/run.sh DEB.
#
# Needs root, debootstrap and systemd-nspawn (systemd-container). The root
# file system is built once with debootstrap into $CACHE (default
# /var/cache/agent-sudo-systemtest) and copied for each run, so that runs do
# not change it. Every check prints "CHECK <what>: ok" or "FAIL <what>: why";
# the script exits non-zero on the first failure, and when the container
# cannot be built or booted, saying why.
set -euo pipefail

DEB=${1:?usage: test/system/run.sh path/to/agent-sudo_VERSION_ARCH.deb}
CACHE=${AGENT_SUDO_SYSTEMTEST_CACHE:-/var/cache/agent-sudo-systemtest}
MIRROR=${AGENT_SUDO_SYSTEMTEST_MIRROR:-http://deb.debian.org/debian}
start=$(date +%s)

die() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "CHECK $*: ok"; }

[ "$(id -u)" = 0 ] || die "setup: the system test needs root"
for t in debootstrap systemd-nspawn nsenter; do
	command -v $t >/dev/null || die "setup: $t not found (apt-get install debootstrap systemd-container)"
done
[ -f "$DEB" ] || die "setup: no package $DEB"

# --- the package, before installing it ---------------------------------------
# docs/install.md lists the tags Debian 12's lintian reports and why each
# stays; another lintian version reports other tags, so only that one is held
# to the list.
repo=$(cd "$(dirname "$0")/../.." && pwd)
if command -v lintian >/dev/null && lintian --version | grep -q '^Lintian v2\.116\.'; then
	got=$({ lintian "$DEB" 2>/dev/null || true; } | sed -nE 's/^[EWI]: agent-sudo: ([a-z0-9-]+).*/\1/p' | sort -u | tr '\n' ' ')
	want=$(sed -nE '/^## lintian/,/^## /s/^\| `([a-z0-9-]+)` \|.*/\1/p' "$repo/docs/install.md" | sort -u | tr '\n' ' ')
	[ "$got" = "$want" ] || die "lintian: it reports the tags '$got'; docs/install.md explains '$want'"
	ok "lintian reports exactly the tags docs/install.md explains ($got)"
else
	echo "lintian 2.116 (Debian 12) is not installed: the package's lintian tags were not checked"
fi

rootfs=$CACHE/bookworm
# procps for /bin/kill, which the unit's ExecReload runs (the package
# depends on it); a cached root file system without it is rebuilt.
if [ ! -x "$rootfs/lib/systemd/systemd" ] || [ ! -x "$rootfs/bin/kill" ]; then
	echo "building the root file system in $rootfs (debootstrap, a few minutes)"
	mkdir -p "$CACHE"
	rm -rf "$CACHE/rootfs.tmp"
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,sudo,procps bookworm "$CACHE/rootfs.tmp" "$MIRROR" \
		>"$CACHE/debootstrap.log" 2>&1 || die "setup: debootstrap failed, see $CACHE/debootstrap.log"
	rm -rf "$rootfs"
	mv "$CACHE/rootfs.tmp" "$rootfs"
fi

work=$(mktemp -d /var/tmp/agent-sudo-systemtest.XXXXXX)
root=$work/root
nspawn=
cleanup() {
	if [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null; then
		kill "$nspawn" 2>/dev/null || true
		wait "$nspawn" 2>/dev/null || true
	fi
	rm -rf "$work"
	echo "system test wall time: $(($(date +%s) - start))s"
}
trap cleanup EXIT
cp -a "$rootfs" "$root"
cp "$DEB" "$root/root/agent-sudo.deb"

systemd-nspawn -D "$root" --register=no --keep-unit --boot --private-network >"$work/boot.log" 2>&1 &
nspawn=$!
pid=
for _ in $(seq 100); do
	pid=$(pgrep -P "$nspawn" -x systemd | head -1 || true)
	[ -n "$pid" ] && break
	kill -0 "$nspawn" 2>/dev/null || die "setup: systemd-nspawn exited: $(tail -5 "$work/boot.log")"
	sleep 0.3
done
[ -n "$pid" ] || die "setup: the container's systemd did not start: $(tail -5 "$work/boot.log")"
c() { nsenter -t "$pid" -a "$@"; }
state=
for _ in $(seq 120); do
	state=$(c systemctl is-system-running 2>/dev/null || true)
	case $state in running | degraded) break ;; esac
	sleep 0.5
done
case $state in running | degraded) ok "container booted (systemd pid $pid, state $state)" ;; *) die "setup: the container did not finish booting (state '$state')" ;; esac

# --- install ---------------------------------------------------------------
c env DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/agent-sudo.deb >"$work/apt.log" 2>&1 ||
	die "apt-get install: $(tail -5 "$work/apt.log")"
ok "apt-get install ./agent-sudo.deb"
c getent group agent-sudo >/dev/null || die "install: no agent-sudo group"
ok "install created the agent-sudo group"
for m in man1/agent-sudo.1.gz man8/agent-sudod.8.gz man5/agent-sudo.toml.5.gz; do
	c test -s /usr/share/man/$m || die "install: no /usr/share/man/$m"
done
ok "the man pages agent-sudo(1), agent-sudod(8) and agent-sudo.toml(5) are installed"
[ "$(c stat -c '%a %U %G' /etc/agent-sudo/config.toml)" = "644 root root" ] || die "install: /etc/agent-sudo/config.toml is $(c stat -c '%a %U %G' /etc/agent-sudo/config.toml)"
ok "/etc/agent-sudo/config.toml is 0644 root:root"
[ "$(c stat -c '%a %U %G' /run/agent-sudo)" = "755 root agent-sudo" ] || die "install: /run/agent-sudo is $(c stat -c '%a %U %G' /run/agent-sudo)"
[ "$(c stat -c '%a %U %G' /run/agent-sudo/agent-sudo.sock)" = "660 root agent-sudo" ] || die "install: the socket is $(c stat -c '%a %U %G' /run/agent-sudo/agent-sudo.sock)"
ok "/run/agent-sudo is 0755 root:agent-sudo and the socket 0660 root:agent-sudo"
[ "$(c systemctl is-active agent-sudo.socket)" = active ] || die "socket: agent-sudo.socket is not active"
svc=$(c systemctl is-active agent-sudo.service || true)
[ "$svc" = inactive ] || die "socket: the service is $svc before any request, want inactive"
ok "the socket is listening and the service is not running before the first request"

# Rules for the checks below (the package's config has none: everything asks).
c sh -c 'cat >>/etc/agent-sudo/config.toml' <<'TOML'

[[rule]]
name = "systemtest id"
action = "allow"
match = ["id", "-u"]

[[rule]]
name = "systemtest sleep"
action = "allow"
match = ["sleep", "*"]
TOML
# sudo resolves the host name; the container has no network.
c sh -c 'echo "127.0.1.1 $(hostname)" >>/etc/hosts'
c useradd -m -G agent-sudo alice
c useradd -m bob

# --- socket activation, READY, members and non-members ----------------------
out=$(c runuser -u alice -- agent-sudo run --session sys-a --reason "system test" -- id -u) || die "member: agent-sudo run failed: $out"
[ "$out" = 0 ] || die "member: id -u printed '$out', want 0"
ok "a request from a member of agent-sudo (alice) ran: id -u printed 0"
show=$(c systemctl show -p ActiveState,SubState,StatusText,NRestarts,MainPID agent-sudo.service)
echo "$show" | sed 's/^/  /'
echo "$show" | grep -qx 'ActiveState=active' || die "activation: the service is not active after the first request"
echo "$show" | grep -qx 'NRestarts=0' || die "activation: the service restarted"
ok "the first request started the service (socket activation); Type=notify and active means READY=1 was sent"
mainpid=$(echo "$show" | sed -n 's/^MainPID=//p')
set +e
out=$(c runuser -u bob -- agent-sudo run --session sys-b --reason "system test" -- id -u 2>&1)
rc=$?
set -e
[ $rc = 69 ] || die "non-member: agent-sudo run exited $rc, want 69: $out"
ok "a request from a non-member (bob) is refused with 69: $out"

# --- journald fields --------------------------------------------------------
c runuser -u alice -- agent-sudo run --session sys-other --reason "system test" -- id -u >/dev/null
# journald indexes entries asynchronously: wait (up to 30s) for the last
# request's.
for _ in $(seq 300); do
	c journalctl -q -o export AGENT_SUDO_SESSION=sys-other | grep -a '^AGENT_SUDO_SESSION=sys-other$' >/dev/null && break
	sleep 0.1
done
n=$(c journalctl -q -o cat --output-fields=AGENT_SUDO_SESSION AGENT_SUDO_SESSION=sys-a | wc -l)
other=$(c journalctl -q -o export AGENT_SUDO_SESSION=sys-a | grep -c '^AGENT_SUDO_SESSION=' || true)
wrong=$(c journalctl -q -o export AGENT_SUDO_SESSION=sys-a | grep '^AGENT_SUDO_SESSION=' | grep -vcx 'AGENT_SUDO_SESSION=sys-a' || true)
[ "$n" -gt 0 ] && [ "$other" -gt 0 ] || die "journal: journalctl AGENT_SUDO_SESSION=sys-a found nothing"
[ "$wrong" = 0 ] || die "journal: journalctl AGENT_SUDO_SESSION=sys-a found $wrong entries of other sessions"
c journalctl -q -o export AGENT_SUDO_SESSION=sys-other | grep -a '^AGENT_SUDO_SESSION=sys-other$' >/dev/null ||
	die "journal: no entries for sys-other; sessions in the journal: $(c journalctl -q -o export | grep -a '^AGENT_SUDO_SESSION=' | sort | uniq -c | tr '\n' ' '); last lines: $(c journalctl -q -n 5 -u agent-sudo.service | tr '\n' ' ')"
ok "journalctl AGENT_SUDO_SESSION=sys-a finds $other entries, all of session sys-a"

# --- watchdog ---------------------------------------------------------------
wd=$(c systemctl show -p WatchdogUSec --value agent-sudo.service)
echo "  WatchdogUSec=$wd; idling for 100s (more than three periods)"
sleep 100
show=$(c systemctl show -p ActiveState,NRestarts,MainPID agent-sudo.service)
echo "$show" | grep -qx 'ActiveState=active' && echo "$show" | grep -qx 'NRestarts=0' && echo "$show" | grep -qx "MainPID=$mainpid" ||
	die "watchdog: after 100s idle: $(echo $show)"
ok "the watchdog is fed: same daemon (pid $mainpid), no restart after 100s idle with WatchdogSec=$wd"

# --- stop during a running command -----------------------------------------
c runuser -u alice -- agent-sudo run --session sys-stop --reason "system test" -- sleep 5 >"$work/stop.out" 2>&1 &
client=$!
# minbase has no pgrep: look for the command in /proc.
running() { c sh -c 'grep -qx sleep /proc/[0-9]*/comm' 2>/dev/null; }
for _ in $(seq 100); do running && break; sleep 0.1; done
running || die "stop: the command did not start"
c systemctl stop agent-sudo.service
set +e
wait $client
rc=$?
set -e
[ $rc = 0 ] || die "stop: the client got $rc: $(cat "$work/stop.out")"
ok "systemctl stop during a running command: the command finished and the client got its answer (exit 0)"
c agent-sudo audit verify >"$work/verify" 2>&1 || die "stop: agent-sudo audit verify: $(cat "$work/verify")"
ok "agent-sudo audit verify after stop: $(tail -1 "$work/verify")"

# --- restart continues the chain -------------------------------------------
c runuser -u alice -- agent-sudo run --session sys-r1 --reason "system test" -- id -u >/dev/null
c systemctl restart agent-sudo.service
c runuser -u alice -- agent-sudo run --session sys-r2 --reason "system test" -- id -u >/dev/null
c agent-sudo audit verify >"$work/verify" 2>&1 || die "restart: agent-sudo audit verify: $(cat "$work/verify")"
ok "systemctl restart continues the hash chain: $(tail -1 "$work/verify")"

# --- reload applies a new rule without a restart ---------------------------
mainpid=$(c systemctl show -p MainPID --value agent-sudo.service)
set +e
out=$(c runuser -u alice -- timeout 3 agent-sudo run --session sys-reload --reason "system test" -- id -g 2>&1)
rc=$?
set -e
[ $rc = 124 ] || die "reload: before the reload, id -g should wait for a human (timeout's 124), got $rc: $out"
c sh -c 'cat >>/etc/agent-sudo/config.toml' <<'TOML'

[[rule]]
name = "systemtest reload"
action = "allow"
match = ["id", "-g"]
TOML
c systemctl reload agent-sudo.service
# systemctl reload returns once the signal is sent: wait (up to 30s) for the
# daemon to say it reloaded.
for _ in $(seq 300); do
	status=$(c systemctl show -p StatusText --value agent-sudo.service)
	case $status in *"last reload at "*) break ;; esac
	sleep 0.1
done
echo "  StatusText=$status"
case $status in "listening on /run/agent-sudo/agent-sudo.sock; "*" ok") ;; *) die "reload: StatusText is '$status', want the socket and the reload ok" ;; esac
out=$(c runuser -u alice -- agent-sudo run --session sys-reload --reason "system test" -- id -g) || die "reload: after the reload, id -g failed: $out"
[ "$out" = 0 ] || die "reload: id -g printed '$out', want 0"
show=$(c systemctl show -p ActiveState,NRestarts,MainPID agent-sudo.service)
echo "$show" | grep -qx 'ActiveState=active' && echo "$show" | grep -qx 'NRestarts=0' && echo "$show" | grep -qx "MainPID=$mainpid" ||
	die "reload: the daemon was restarted: $(echo $show)"
c journalctl -q -u agent-sudo.service -o cat | grep -qx 'reloaded' || die "reload: the journal has no reloaded line"
ok "systemctl reload applied a new rule: id -g asked before and ran after, same daemon (pid $mainpid), no restart"

# --- remove and purge -------------------------------------------------------
c env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q agent-sudo >"$work/apt.log" 2>&1 || die "apt-get remove: $(tail -5 "$work/apt.log")"
for f in /etc/agent-sudo/config.toml /etc/logrotate.d/agent-sudo /var/log/agent-sudo/audit.jsonl; do
	c test -e $f || die "remove: $f is gone, docs/install.md says it stays"
done
for f in /usr/bin/agent-sudod /usr/bin/agent-sudo /lib/systemd/system/agent-sudo.socket /etc/systemd/system/sockets.target.wants/agent-sudo.socket; do
	c test ! -e $f || die "remove: $f is still there"
done
c systemctl is-active --quiet agent-sudo.socket && die "remove: the socket is still active"
ok "apt-get remove: binaries and units gone, socket stopped; config, logrotate file and audit log kept"
c env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q agent-sudo >"$work/apt.log" 2>&1 || die "apt-get purge: $(tail -5 "$work/apt.log")"
for f in /etc/agent-sudo /etc/logrotate.d/agent-sudo /var/log/agent-sudo /run/agent-sudo; do
	c test ! -e $f || die "purge: $f is still there"
done
c getent group agent-sudo >/dev/null || die "purge: the agent-sudo group is gone, docs/install.md says it stays"
ok "apt-get purge: /etc/agent-sudo, /etc/logrotate.d/agent-sudo, /var/log/agent-sudo and /run/agent-sudo gone; group kept"

c systemctl poweroff >/dev/null 2>&1 || true
wait "$nspawn" 2>/dev/null || true
nspawn=
echo "PASS system test"
