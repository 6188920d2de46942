#!/usr/bin/env bash
# make web-test: installs playwright-core as package-lock.json pins it (npm
# ci, cached by the lockfile's hash; no browser is downloaded) and runs the
# Go tests in this directory, which drive Debian's chromium with a WebAuthn
# virtual authenticator against the web approver and a real agent-sudod.
set -euo pipefail
cd "$(dirname "$0")"
chromium=${AGENT_SUDO_TEST_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "web-test: $chromium not found: apt-get install chromium" >&2
  exit 1
fi
sum=$(sha256sum package-lock.json | cut -c1-16)
dir="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/agent-sudo/web-$sum"
if [ ! -d "$dir/node_modules/playwright-core" ]; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  cp package.json package-lock.json "$dir.tmp/"
  (cd "$dir.tmp" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 240 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
cd ../..
AGENT_SUDO_TEST_NODE_PATH="$dir/node_modules" AGENT_SUDO_TEST_CHROMIUM="$chromium" \
  timeout 330 go test -race -count=1 -timeout 300s -v ./test/web/
