#!/usr/bin/env bash
# The arm64 package's binaries run: `make deb DEB_ARCHES=arm64` cross-builds
# them, and this runs them under qemu-user (Debian's qemu-user-static), so
# that a broken cross build is caught on an amd64 machine (issue 34). Run
# through `make arm64-test`: test/system/arm64.sh dist/agent-sudo_VERSION_arm64.deb
# It prints "CHECK <what>: ok" or "FAIL <what>: why".
set -euo pipefail

die() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "CHECK $*: ok"; }

deb=${1:?usage: test/system/arm64.sh path/to/agent-sudo_VERSION_arm64.deb}
[ -f "$deb" ] || die "setup: no package $deb"
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
[ -n "$qemu" ] || die "setup: qemu-aarch64-static not found (apt-get install qemu-user-static)"
[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || die "package: $deb is not for arm64 but $(dpkg-deb -f "$deb" Architecture)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/root"
for b in agent-sudod agent-sudo; do
	f=$work/root/usr/bin/$b
	file -b "$f" 2>/dev/null | grep -q 'ARM aarch64' || [ "$(od -An -tx1 -j18 -N2 "$f" | tr -d ' ')" = b700 ] ||
		die "package: /usr/bin/$b is not an arm64 ELF binary"
	out=$("$qemu" "$f" --version 2>&1) || die "$b --version under $qemu: $out"
	case $out in "$b "*) ;; *) die "$b --version printed '$out', want '$b VERSION'" ;; esac
	ok "$b --version under qemu-user: $out"
done
# The package's own config, with a group that exists here; then one that
# is wrong, which --check-config must refuse.
{ echo 'socket_group = "root"'; cat "$work/root/etc/agent-sudo/config.toml"; } >"$work/good.toml"
out=$("$qemu" "$work/root/usr/bin/agent-sudod" --check-config --config "$work/good.toml" 2>&1) ||
	die "agent-sudod --check-config of the package's config under qemu-user: $out"
ok "agent-sudod --check-config accepts the package's config under qemu-user"
printf 'socket_group = "root"\nexec = "neither"\n' >"$work/bad.toml"
if out=$("$qemu" "$work/root/usr/bin/agent-sudod" --check-config --config "$work/bad.toml" 2>&1); then
	die "agent-sudod --check-config accepted exec = \"neither\" under qemu-user: $out"
fi
case $out in *exec*) ;; *) die "agent-sudod --check-config refused exec = \"neither\" without naming exec: $out" ;; esac
ok "agent-sudod --check-config refuses a wrong config under qemu-user, naming the key"
