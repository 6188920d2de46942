#!/usr/bin/env bash
# Starts bin/agent-sudod in the foreground with a development configuration
# in a fresh temporary directory (socket, audit log, log file and config all
# live there; the user who ran `make run` may connect) and approves requests
# on this terminal (--tty). Used by `make run`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=SSH_AUTH_SOCK -- "$0" "$@"
fi

# The user who asked, when we came through sudo; root otherwise.
dev_user=${SUDO_USER:-root}
dev_group=$(id -gn "$dev_user")

dir=$(mktemp -d /tmp/agent-sudo-dev.XXXXXX)
chmod 0755 "$dir"
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

cat <<MSG
agent-sudod (development) in $dir
  socket:  $dir/agent-sudo.sock   (group $dev_group, user $dev_user allowed)
  config:  $dir/config.toml
  log:     $dir/agent-sudod.log
Send a request from another terminal, then approve it here:
  bin/agent-sudo run --socket $dir/agent-sudo.sock --reason "try it" -- touch /tmp/agent-sudo-was-here
  bin/agent-sudo run --socket $dir/agent-sudo.sock -- id        (allowed by a rule, no prompt)
Quit the approver with q (the daemon stops with it).
MSG
sleep 2
exec bin/agent-sudod --config "$dir/config.toml" --tty "$@"
