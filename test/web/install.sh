#!/usr/bin/env bash
# Installs playwright-core as package-lock.json pins it (npm ci, cached by
# the lockfile's hash; no browser is downloaded) and prints the directory
# of its node_modules, for AGENT_SUDO_TEST_NODE_PATH. make web-test
# (run.sh) and make remote-test use it.
set -euo pipefail
cd "$(dirname "$0")"
sum=$(sha256sum package-lock.json | cut -c1-16)
dir="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/agent-sudo/web-$sum"
if [ ! -d "$dir/node_modules/playwright-core" ]; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  cp package.json package-lock.json "$dir.tmp/"
  (cd "$dir.tmp" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 240 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
echo "$dir/node_modules"
