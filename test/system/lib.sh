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
# trixie Debian 13, which also gets sudo-rs (test/system/sudo-rs.sh) and
# lintian (Debian 13's, which run.sh runs in the container).
# procps for /bin/kill, which the unit's ExecReload runs (the package
# depends on it), and make for the guide's make install; a cached root
# file system without them is rebuilt.
base_rootfs() {
	# extra: packages apt-get installs afterwards, in the new root file
	# system (debootstrap fails to configure lintian's perl modules).
	local release=${1:-bookworm} include=systemd,systemd-sysv,dbus,sudo,procps,make want= extra=
	case $release in
	bookworm) ;;
	trixie) include=$include,sudo-rs extra=lintian want="/usr/bin/sudo-rs /usr/bin/lintian" ;;
	*) die "setup: no root file system for Debian release '$release'" ;;
	esac
	local rootfs=$CACHE/$release
	local have=yes f
	for f in /lib/systemd/systemd /bin/kill /usr/bin/make $want; do
		[ -x "$rootfs$f" ] || have=
	done
	[ -z "$have" ] || return 0
	echo "building the $release root file system in $rootfs (debootstrap, a few minutes)"
	mkdir -p "$CACHE"
	rm -rf "$CACHE/$release.tmp"
	debootstrap --variant=minbase --include=$include "$release" "$CACHE/$release.tmp" "$MIRROR" \
		>"$CACHE/debootstrap-$release.log" 2>&1 || die "setup: debootstrap of $release failed, see $CACHE/debootstrap-$release.log"
	if [ -n "$extra" ]; then
		systemd-nspawn -q -D "$CACHE/$release.tmp" --register=no --keep-unit --resolv-conf=copy-host --pipe \
			sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" && apt-get clean' sh $extra \
			>>"$CACHE/debootstrap-$release.log" 2>&1 || die "setup: apt-get install $extra in $release failed, see $CACHE/debootstrap-$release.log"
	fi
	rm -rf "$rootfs"
	mv "$CACHE/$release.tmp" "$rootfs"
}
