#!/usr/bin/env bash
# make agents-test: installs the Claude Code and the Codex CLI that
# package-lock.json pins (npm ci, cached by the lockfile's hash) and runs
# the Go tests in this directory against them, with a stand-in model and a
# real agent-sudod. Every step has a time limit: the whole run stays under
# 9 minutes (npm ci fetches some 500 MB once; about 2 minutes once cached).
set -euo pipefail
cd "$(dirname "$0")"

case "$(uname -m)" in
  x86_64) arch=x64 triple=x86_64-unknown-linux-musl ;;
  aarch64 | arm64) arch=arm64 triple=aarch64-unknown-linux-musl ;;
  *) echo "agents-test: no Claude Code or Codex build for $(uname -m)" >&2; exit 1 ;;
esac
sum=$(sha256sum package-lock.json | cut -c1-16)
dir="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/agent-sudo/agents-$sum"
# The native binaries inside the platform packages; npm runs no install
# script (--ignore-scripts), so the wrapper packages' bins stay stubs.
claude="$dir/node_modules/@anthropic-ai/claude-code-linux-$arch/claude"
codex="$dir/node_modules/@openai/codex-linux-$arch/vendor/$triple/bin/codex"
if [ ! -x "$claude" ] || [ ! -x "$codex" ]; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  cp package.json package-lock.json "$dir.tmp/"
  (cd "$dir.tmp" && timeout 240 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
timeout 30 "$claude" --version
timeout 30 "$codex" --version

cd ../..
AGENT_SUDO_TEST_CLAUDE="$claude" AGENT_SUDO_TEST_CODEX="$codex" timeout 270 go test -count=1 -timeout 260s -v ./test/agents/
