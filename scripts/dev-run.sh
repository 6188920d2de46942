#!/usr/bin/env bash
# Starts bin/agent-sudod in the foreground with a development configuration
# in a fresh temporary directory (socket, audit log, log file and config all
# live there; the user who ran `make run` may connect) and approves requests
# on this terminal (--tty). bin/dev.sock links to the socket, so that the
# agent side is always `bin/agent-sudo run --socket bin/dev.sock ...`
# (README.md). When the daemon stops, the directory and the link are
# removed. Used by `make run`; AGENT_SUDO_DEV_BIN names another directory of
# built binaries (the tests').
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${AGENT_SUDO_DEV_BIN:-bin}

if [ "$(id -u)" -ne 0 ]; then
  # NAME=value words, not --preserve-env=LIST, which sudo-rs 0.2.5 ignores;
  # $0 is a path, which neither sudo nor sudo-rs reads as an assignment.
  pass=()
  for v in SSH_AUTH_SOCK AGENT_SUDO_DEV_BIN; do
    [ -z "${!v-}" ] || pass+=("$v=${!v}")
  done
  exec sudo "${pass[@]}" "$(pwd)/scripts/dev-run.sh" "$@"
fi
# What this script writes for root must not depend on the caller's umask:
# sudo-rs keeps it (0002 for a Debian user), and the daemon refuses a
# config.toml that group or others can write.
umask 0022

# The user who asked, when we came through sudo; root otherwise.
dev_user=${SUDO_USER:-root}
dev_group=$(id -gn "$dev_user")

dir=$(mktemp -d /tmp/agent-sudo-dev.XXXXXX)
chmod 0755 "$dir"
link=$bin/dev.sock
cleanup() {
  # The link only if it is still ours: another make run may have taken it.
  [ "$(readlink "$link" 2>/dev/null)" = "$dir/agent-sudo.sock" ] && rm -f "$link"
  rm -rf "$dir"
}
trap cleanup EXIT
ln -sfn "$dir/agent-sudo.sock" "$link"
cat > "$dir/config.toml" <<CONF
# Development configuration written by scripts/dev-run.sh.
socket = "$dir/agent-sudo.sock"
socket_group = "$dev_group"
allowed_users = ["root", "$dev_user"]
approver_socket = "$dir/approver.sock"
audit_log = "$dir/audit.jsonl"
exec = "sudo"
approval_timeout = "2m"

# Harmless read-only commands run without asking; everything else waits for
# a human.
[[rule]]
name = "harmless"
action = "allow"
match = ["id", "**"]

[[rule]]
name = "uname"
action = "allow"
match = ["uname", "**"]
CONF
chmod 0644 "$dir/config.toml"

cat <<MSG
agent-sudod (development) in $dir, removed when it stops
  socket:  $link -> $dir/agent-sudo.sock   (group $dev_group, user $dev_user allowed)
  config:  $dir/config.toml
  log:     $dir/agent-sudod.log
Send a request from another terminal, then approve it here (README.md, "Try it"):
  $bin/agent-sudo run --socket $link --reason "try it" -- touch /tmp/agent-sudo-was-here
  $bin/agent-sudo run --socket $link -- id        (allowed by a rule, no prompt)
Quit the approver with q (the daemon stops with it).
MSG
sleep 2
# --tty runs the console as the agent-sudo beside agent-sudod, and only one
# nobody but root can change (docs/approving.md): bin/ may be the developer's,
# so the daemon runs from root's copies in the temporary directory.
install -d -m 0755 "$dir/bin"
install -m 0755 "$bin/agent-sudod" "$bin/agent-sudo" "$dir/bin/"
# Not exec: the directory and the link are removed when the daemon stops.
status=0
"$dir/bin/agent-sudod" --config "$dir/config.toml" --tty "$@" || status=$?
exit $status
