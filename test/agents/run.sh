#!/usr/bin/env bash
# make agents-test: installs the Claude Code that package-lock.json pins
# (npm ci, cached by the lockfile's hash) and runs the Go tests in this
# directory against it, with a stand-in model and a real agent-sudod.
# Every step has a time limit: the whole run stays under 5 minutes.
set -euo pipefail
cd "$(dirname "$0")"

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "agents-test: no Claude Code build for $(uname -m)" >&2; exit 1 ;;
esac
sum=$(sha256sum package-lock.json | cut -c1-16)
dir="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/agent-sudo/agents-$sum"
# The native binary inside the platform package; npm runs no install
# script (--ignore-scripts), so the wrapper package's bin stays a stub.
claude="$dir/node_modules/@anthropic-ai/claude-code-linux-$arch/claude"
if [ ! -x "$claude" ]; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  cp package.json package-lock.json "$dir.tmp/"
  (cd "$dir.tmp" && timeout 180 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
timeout 30 "$claude" --version

cd ../..
AGENT_SUDO_TEST_CLAUDE="$claude" timeout 270 go test -count=1 -timeout 260s -v ./test/agents/
