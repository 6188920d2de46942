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

# base_rootfs makes sure $CACHE/bookworm holds the minimal Debian 12 the
# tests boot or run commands in, building it with debootstrap from $MIRROR
# when it is missing. procps for /bin/kill, which the unit's ExecReload runs
# (the package depends on it), and make for the guide's make install; a
# cached root file system without them is rebuilt.
base_rootfs() {
	local rootfs=$CACHE/bookworm
	if [ -x "$rootfs/lib/systemd/systemd" ] && [ -x "$rootfs/bin/kill" ] && [ -x "$rootfs/usr/bin/make" ]; then
		return 0
	fi
	echo "building the root file system in $rootfs (debootstrap, a few minutes)"
	mkdir -p "$CACHE"
	rm -rf "$CACHE/rootfs.tmp"
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,sudo,procps,make bookworm "$CACHE/rootfs.tmp" "$MIRROR" \
		>"$CACHE/debootstrap.log" 2>&1 || die "setup: debootstrap failed, see $CACHE/debootstrap.log"
	rm -rf "$rootfs"
	mv "$CACHE/rootfs.tmp" "$rootfs"
}
