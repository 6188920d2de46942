#!/usr/bin/env bash
# Runs `go test -short ./...` as an unprivileged user on a copy of the tree,
# as README.md promises it works without root: make short-unprivileged, run
# by CI as root. The user (agent-sudo-ci, made when missing) gets its own
# Go caches, so nothing of root's is shared with it.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "short-unprivileged: run as root (it makes a user and runs the tests as that user)" >&2; exit 2; }
user=agent-sudo-ci
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /usr/sbin/nologin "$user"
home=$(getent passwd "$user" | cut -d: -f6)
src=$(mktemp -d /tmp/agent-sudo-short.XXXXXX)
trap 'rm -rf "$src"' EXIT
# The tree as it is (a CI clone has nothing uncommitted; a developer's
# working changes are tested too), without .git and build output.
tar --exclude=./.git --exclude=./bin --exclude=./dist --exclude='./test/*/node_modules' -C "$(dirname "$0")/.." -cf - . | tar -C "$src" -xf -
chown -R "$user:" "$src"
go=$(command -v go)
echo "go test -short -count=1 ./... as $user ($(id "$user"))"
exec runuser -u "$user" -- env -i HOME="$home" PATH="$(dirname "$go"):/usr/bin:/bin" \
  GOTOOLCHAIN="$(go env GOTOOLCHAIN)" GOPROXY="$(go env GOPROXY)" GOFLAGS="$(go env GOFLAGS)" \
  "$go" -C "$src" test -short -count=1 ./...
