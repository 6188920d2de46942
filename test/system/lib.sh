# Sourced by the system tests (run.sh, readme-go.sh, hosts.sh), each of which
# sets CACHE and MIRROR and defines die before it sources this file.

# block FILE MARKER NAME prints the commands of FILE's ```sh block on the line
# after <!-- MARKER: NAME -->, so that the test runs the docs word for word.
block() {
	local text
	text=$(awk -v mark="<!-- $2: $3 -->" '
		$0 == mark { want = 1; next }
		want && /^```sh$/ { inblock = 1; next }
		inblock && /^```$/ { exit }
		inblock { print }
	' "$1")
	[ -n "$text" ] || die "$(basename "$1") has no shell block marked <!-- $2: $3 -->"
	printf '%s\n' "$text"
}

# base_rootfs [RELEASE] makes sure $CACHE/RELEASE (default bookworm) holds
# the minimal Debian the tests boot or run commands in, building it with
# debootstrap from $MIRROR when it is missing: bookworm is Debian 12,
# trixie Debian 13, which also gets sudo-rs (test/system/sudo-rs.sh).
# procps for /bin/kill, which the unit's ExecReload runs (the package
# depends on it), and make for the guide's make install; a cached root
# file system without them is rebuilt.
base_rootfs() {
	local release=${1:-bookworm} include=systemd,systemd-sysv,dbus,sudo,procps,make want=
	case $release in
	bookworm) ;;
	trixie) include=$include,sudo-rs want=/usr/bin/sudo-rs ;;
	*) die "setup: no root file system for Debian release '$release'" ;;
	esac
	local rootfs=$CACHE/$release
	if [ -x "$rootfs/lib/systemd/systemd" ] && [ -x "$rootfs/bin/kill" ] && [ -x "$rootfs/usr/bin/make" ] &&
		{ [ -z "$want" ] || [ -x "$rootfs$want" ]; }; then
		return 0
	fi
	echo "building the $release root file system in $rootfs (debootstrap, a few minutes)"
	mkdir -p "$CACHE"
	rm -rf "$CACHE/$release.tmp"
	debootstrap --variant=minbase --include=$include "$release" "$CACHE/$release.tmp" "$MIRROR" \
		>"$CACHE/debootstrap-$release.log" 2>&1 || die "setup: debootstrap of $release failed, see $CACHE/debootstrap-$release.log"
	rm -rf "$rootfs"
	mv "$CACHE/$release.tmp" "$rootfs"
}
