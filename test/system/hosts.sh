#!/usr/bin/env bash
# Many hosts, one audit: docs/remote.md's "Many hosts, one audit" in three
# booted Debian 12 containers. `make hosts-test` runs it:
# test/system/hosts.sh path/to/agent-sudo_VERSION_ARCH.deb
#
# logs is the central host (systemd-journal-remote); build-01 and build-02
# have the .deb and upload their journals to logs (systemd-journal-upload),
# with TLS both ways. The containers are on a bridge of their own and
# nothing else. The blocks of docs/remote.md marked <!-- hosts-test: NAME -->
# run word for word (`doc NAME` prints one).
#
# Needs root, systemd-nspawn (systemd-container), nsenter, ip (iproute2),
# openssl and dpkg-deb. The root file system is make systemtest's
# (test/system/run.sh), built with debootstrap into $CACHE/bookworm when
# missing, plus the package systemd-journal-remote in $CACHE/bookworm-journal,
# made once (the network is needed then). Every check prints "CHECK
# <what>: ok"; the script exits non-zero on the first failure, saying why.
set -euo pipefail

DEB=${1:?usage: test/system/hosts.sh path/to/agent-sudo_VERSION_ARCH.deb}
CACHE=${AGENT_SUDO_SYSTEMTEST_CACHE:-/var/cache/agent-sudo-systemtest}
MIRROR=${AGENT_SUDO_SYSTEMTEST_MIRROR:-http://deb.debian.org/debian}
start=$(date +%s)

die() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "CHECK $*: ok"; }

[ "$(id -u)" = 0 ] || die "setup: the hosts test needs root"
for t in debootstrap systemd-nspawn nsenter ip openssl dpkg-deb; do
	command -v $t >/dev/null || die "setup: $t not found (apt-get install debootstrap systemd-container iproute2 openssl)"
done
[ -f "$DEB" ] || die "setup: no package $DEB"
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$repo/test/system/lib.sh"

# doc NAME prints the commands of the block of docs/remote.md marked
# <!-- hosts-test: NAME -->.
doc() { block "$repo/docs/remote.md" hosts-test "$1"; }

# --- the root file systems ------------------------------------------------
base=$CACHE/bookworm
base_rootfs
jroot=$CACHE/bookworm-journal
if [ ! -x "$jroot/lib/systemd/systemd-journal-upload" ] || [ "$base" -nt "$jroot" ]; then
	echo "adding systemd-journal-remote to a copy of $base in $jroot (apt-get, once)"
	rm -rf "$CACHE/journal.tmp"
	cp -a "$base" "$CACHE/journal.tmp"
	systemd-nspawn -q -D "$CACHE/journal.tmp" --register=no --keep-unit --resolv-conf=copy-host --pipe \
		sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd-journal-remote' \
		>"$CACHE/journal.log" 2>&1 || die "setup: apt-get install systemd-journal-remote failed, see $CACHE/journal.log"
	rm -rf "$jroot"
	mv "$CACHE/journal.tmp" "$jroot"
fi

# --- three containers on a bridge of their own ------------------------------
names=(logs build-01 build-02)
declare -A addr=([logs]=10.231.0.1 [build-01]=10.231.0.2 [build-02]=10.231.0.3)
declare -A nspawn pid
work=$(mktemp -d /var/tmp/agent-sudo-hosts.XXXXXX)
# A bridge name of at most 15 characters, this run's own.
br=ash$$
br=${br:0:15}
cleanup() {
	for n in "${names[@]}"; do
		p=${nspawn[$n]:-}
		if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
			kill "$p" 2>/dev/null || true
		fi
	done
	for n in "${names[@]}"; do
		p=${nspawn[$n]:-}
		[ -n "$p" ] && { wait "$p" 2>/dev/null || true; }
	done
	ip link del "$br" 2>/dev/null || true
	rm -rf "$work"
	echo "hosts test wall time: $(($(date +%s) - start))s"
}
trap cleanup EXIT
ip link add name "$br" type bridge || die "setup: ip link add $br type bridge failed"
ip link set "$br" up
for n in "${names[@]}"; do
	cp -a "$jroot" "$work/$n"
	echo "$n" >"$work/$n/etc/hostname"
	for m in "${names[@]}"; do echo "${addr[$m]} $m"; done >>"$work/$n/etc/hosts"
	# Each container has a machine id of its own, as separate machines
	# do (the copies share the cached one).
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$work/$n/etc/machine-id"
	echo >>"$work/$n/etc/machine-id"
	systemd-nspawn -D "$work/$n" --machine="$n" --register=no --keep-unit --boot --network-bridge="$br" \
		>"$work/$n.boot.log" 2>&1 &
	nspawn[$n]=$!
done
for n in "${names[@]}"; do
	p=
	for _ in $(seq 100); do
		p=$(pgrep -P "${nspawn[$n]}" -x systemd | head -1 || true)
		[ -n "$p" ] && break
		kill -0 "${nspawn[$n]}" 2>/dev/null || die "setup: systemd-nspawn of $n exited: $(tail -5 "$work/$n.boot.log")"
		sleep 0.3
	done
	[ -n "$p" ] || die "setup: the systemd of $n did not start: $(tail -5 "$work/$n.boot.log")"
	pid[$n]=$p
	# The host's ip, in the container's network namespace (minbase has
	# no iproute2).
	nsenter -t "$p" -n ip addr add "${addr[$n]}/24" dev host0
	nsenter -t "$p" -n ip link set host0 up
done
# on NAME CMD... runs CMD in container NAME.
on() {
	local n=$1
	shift
	nsenter -t "${pid[$n]}" -a "$@"
}
for n in "${names[@]}"; do
	state=
	for _ in $(seq 120); do
		state=$(on "$n" systemctl is-system-running 2>/dev/null || true)
		case $state in running | degraded) break ;; esac
		sleep 0.5
	done
	case $state in running | degraded) ;; *) die "setup: $n did not finish booting (state '$state')" ;; esac
done
ok "logs, build-01 and build-02 booted on the bridge $br ($(for n in "${names[@]}"; do printf '%s=%s ' "$n" "${addr[$n]}"; done))"

# --- certificates and the journal services (docs/remote.md) -----------------
mkdir "$work/certs"
(cd "$work/certs" && bash -euc "$(doc certs)") >"$work/certs.log" 2>&1 || die "certs: $(tail -5 "$work/certs.log")"
ok "docs: the CA and a certificate for each of ${names[*]} made with openssl"
for n in "${names[@]}"; do
	mkdir -p "$work/$n/root/certs"
	cp "$work/certs/ca.pem" "$work/certs/$n.pem" "$work/certs/$n.key" "$work/$n/root/certs/"
done
on logs sh -euc "cd /root/certs; $(doc central)" >"$work/central.log" 2>&1 || die "central: $(tail -5 "$work/central.log")"
[ "$(on logs systemctl is-active systemd-journal-remote.socket)" = active ] || die "central: systemd-journal-remote.socket is not active"
ok "docs: the central block on logs: systemd-journal-remote.socket listens"
for n in build-01 build-02; do
	on "$n" sh -euc "cd /root/certs; $(doc upload)" >"$work/$n.upload.log" 2>&1 || die "upload on $n: $(tail -5 "$work/$n.upload.log")"
	[ "$(on "$n" systemctl is-active systemd-journal-upload.service)" = active ] ||
		die "upload on $n: systemd-journal-upload is $(on "$n" systemctl is-active systemd-journal-upload.service || true): $(on "$n" journalctl -q -u systemd-journal-upload -n 5 -o cat | tr '\n' ' ')"
done
ok "docs: the upload block on build-01 and build-02: systemd-journal-upload runs"

# --- the package, and a request on each host -----------------------------------
for n in build-01 build-02; do
	cp "$DEB" "$work/$n/root/agent-sudo.deb"
	on "$n" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/agent-sudo.deb >"$work/$n.apt.log" 2>&1 ||
		die "install on $n: $(tail -5 "$work/$n.apt.log")"
	on "$n" useradd -m alice
	on "$n" usermod -aG agent-sudo alice
	on "$n" sh -c 'cat >>/etc/agent-sudo/config.toml' <<'TOML'

[[rule]]
name = "hosts test id"
action = "allow"
match = ["id", "-u"]
TOML
done
# The central host needs the CLI only.
dpkg-deb -x "$DEB" "$work/deb"
cp "$work/deb/usr/bin/agent-sudo" "$work/logs/usr/local/bin/agent-sudo"
ok "the .deb installed on build-01 and build-02, with a rule allowing id -u; agent-sudo copied to logs"
for n in build-01 build-02; do
	out=$(on "$n" runuser -u alice -- agent-sudo run --session "hosts-$n" --reason "hosts test" -- id -u 2>&1) || die "request on $n: $out"
	[ "$out" = 0 ] || die "request on $n: id -u printed '$out', want 0"
done
ok "alice's id -u ran on build-01 and build-02 by the rule (session hosts-build-01, hosts-build-02)"

# --- the records arrive at the central journal -------------------------------------
list() { on logs agent-sudo audit --journal-dir /var/log/journal/remote "$@"; }
# journal-upload sends as entries come; wait (up to 60s) for both rows.
rows=
for _ in $(seq 120); do
	rows=$(list --session 'hosts-*' --status ok --json 2>/dev/null || true)
	[ "$(printf '%s\n' "$rows" | grep -c '"status":"ok"')" = 2 ] && break
	sleep 0.5
done
table=$(list --session 'hosts-*' --wide)
printf '%s\n' "$table" | sed 's/^/  /'
for n in build-01 build-02; do
	# --wide's columns: TIME, DAEMON, ID, UID, SESSION, HOST, STATUS, ...
	printf '%s\n' "$table" | awk -F '  +' -v n="$n" '$2 == n && $5 == "hosts-" n && $7 == "ok" && $NF == "id -u" { found = 1 } END { exit !found }' ||
		die "listing: no ok row of $n's request under DAEMON $n in: $table"
done
ok "agent-sudo audit --journal-dir /var/log/journal/remote on logs lists both requests, each under its own host"
only=$(list --daemon-host build-02 --session 'hosts-*' --json)
[ "$(printf '%s\n' "$only" | grep -c .)" = 1 ] && printf '%s\n' "$only" | grep '"session":"hosts-build-02"' | grep '"daemon_host":"build-02"' >/dev/null ||
	die "listing: --daemon-host build-02 printed: $only"
ok "--daemon-host build-02 lists build-02's request only"
on logs ls /var/log/journal/remote | sed 's/^/  /'

# --- a log that lost its tail, caught by the central anchor -------------------------
# Stop build-01's daemon and its sockets (a connection would start it
# again): the closing anchor goes to its journal, and on to logs.
on build-01 systemctl stop agent-sudo.socket agent-sudo-approver.socket agent-sudo.service
want=$(on build-01 agent-sudo audit verify | sed -n 's/^last record: seq [0-9]*, hash //p')
[ -n "$want" ] || die "anchor: build-01's verify printed no last hash"
anchor=
for _ in $(seq 120); do
	anchor=$(on logs sh -c "$(doc anchor)" 2>/dev/null || true)
	[ "$anchor" = "$want" ] && break
	sleep 0.5
done
[ "$anchor" = "$want" ] || die "anchor: the central journal's last hash of build-01 is '$anchor', the log's last record $want"
ok "docs: the anchor block on logs prints build-01's last hash, that of its log's last record ($anchor)"
lines=$(on build-01 sh -c 'wc -l </var/log/agent-sudo/audit.jsonl')
on build-01 sh -euc 'head -n -3 /var/log/agent-sudo/audit.jsonl >/root/cut && cat /root/cut >/var/log/agent-sudo/audit.jsonl'
out=$(on build-01 agent-sudo audit verify 2>&1) || die "cut: verify without an anchor failed on the cut log: $out"
ok "build-01's log cut from $lines to $((lines - 3)) lines; agent-sudo audit verify alone passes: $(echo "$out" | tail -1)"
set +e
out=$(on build-01 agent-sudo audit verify --anchor "$anchor" 2>&1)
rc=$?
set -e
[ $rc = 65 ] || die "cut: verify --anchor exited $rc, want 65: $out"
case $out in *"is not the hash of any record"*) ;; *) die "cut: verify --anchor said: $out" ;; esac
ok "agent-sudo audit verify --anchor (the central hash) on build-01 exits 65: $out"
anchor2=$(on logs sh -c "$(doc anchor | sed 's/_HOSTNAME=build-01/_HOSTNAME=build-02/')")
out=$(on build-02 agent-sudo audit verify --anchor "$anchor2" 2>&1) || die "build-02: verify --anchor $anchor2 failed: $out"
ok "build-02's untouched log passes with its central anchor: $(echo "$out" | tail -1)"
# Every hash each host sent, as the anchors block collects them on logs,
# checked on the host with xargs.
for n in build-01 build-02; do
	on logs sh -euc "cd /root; $(doc anchors | sed "s/build-01/$n/g")" || die "anchors: the anchors block failed for $n"
	cp "$work/logs/root/$n.anchors" "$work/$n/root/"
	echo "  $n: $(wc -l <"$work/$n/root/$n.anchors") anchors"
done
[ -s "$work/build-01/root/build-01.anchors" ] || die "anchors: logs holds no anchor of build-01"
out=$(on build-02 sh -c 'xargs agent-sudo audit verify </root/build-02.anchors' 2>&1) || die "anchors: build-02 fails with all its anchors: $out"
ok "build-02 passes with every hash it sent (docs: the anchors block, then xargs agent-sudo audit verify): $(echo "$out" | tail -1)"
set +e
out=$(on build-01 sh -c 'xargs agent-sudo audit verify </root/build-01.anchors' 2>&1)
rc=$?
set -e
[ $rc = 123 ] && case $out in *"is not the hash of any record"*) true ;; *) false ;; esac ||
	die "anchors: build-01's cut log with all its anchors: xargs exited $rc, want 123 (verify failed): $out"
ok "build-01's cut log fails with every hash it sent (xargs exits 123): $(echo "$out" | grep -m1 'is not the hash of any record')"

# --- what TLS checks, and what it does not -----------------------------------------
(cd "$work" && openssl req -x509 -newkey rsa:3072 -nodes -days 1 -subj "/CN=build-02" -keyout rogue.key -out rogue.pem) >"$work/rogue.log" 2>&1 ||
	die "rogue: openssl: $(tail -3 "$work/rogue.log")"
cp "$work/rogue.key" "$work/rogue.pem" "$work/build-02/root/"
# upload KEY CERT TRUST: a one-off systemd-journal-upload of build-02's
# journal to logs. It refuses a second --url or --key besides its
# configuration's: the drop-in is hidden, in a mount namespace of its own.
upload() {
	on build-02 timeout 60 unshare --mount sh -c 'mount -t tmpfs none /etc/systemd/journal-upload.conf.d &&
		exec /lib/systemd/systemd-journal-upload --url=https://logs:19532 --key="$1" --cert="$2" --trust="$3" --follow=no' sh "$@" 2>&1
}
tls=/etc/systemd/journal-upload-tls
set +e
out=$(upload $tls/client.key $tls/client.pem /root/rogue.pem)
rc=$?
set -e
[ $rc != 0 ] && [ $rc != 124 ] || die "server check: an upload trusting another CA than the one that signed logs' certificate exited $rc: $out"
ok "an upload that trusts another CA than logs' is refused (exit $rc: $(printf '%s\n' "$out" | grep -i -m1 -E "certificate|ssl|tls" || printf '%s\n' "$out" | tail -1)): the hosts check the central host's certificate"
# Debian 12's journal-remote is built without its own GnuTLS checks: it
# says "Certificate checking disabled." and takes an upload whatever its
# client certificate, as docs/remote.md says. This pins that statement.
out=$(upload /root/rogue.key /root/rogue.pem $tls/ca.pem) || die "client check: the upload with a self-signed client certificate failed: $out"
on logs journalctl -q -u systemd-journal-remote -o cat | grep -Fx 'Certificate checking disabled.' >/dev/null ||
	die "client check: logs' journal-remote does not say 'Certificate checking disabled.' any more: docs/remote.md says it takes any client certificate; see if it checks them now"
ok "as docs/remote.md says, logs' journal-remote takes an upload with a self-signed client certificate ('Certificate checking disabled.')"

for n in "${names[@]}"; do on "$n" systemctl poweroff >/dev/null 2>&1 || true; done
for n in "${names[@]}"; do
	wait "${nspawn[$n]}" 2>/dev/null || true
	nspawn[$n]=
done
echo "PASS hosts test"
