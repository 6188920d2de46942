#!/usr/bin/env bash
# make web-test: installs playwright-core as package-lock.json pins it
# (install.sh; no browser is downloaded) and runs the Go tests in this
# directory, which drive Debian's chromium with a WebAuthn virtual
# authenticator against the web approver and a real agent-sudod.
set -euo pipefail
cd "$(dirname "$0")"
chromium=${AGENT_SUDO_TEST_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "web-test: $chromium not found: apt-get install chromium" >&2
  exit 1
fi
mods=$(./install.sh)
cd ../..
AGENT_SUDO_TEST_NODE_PATH="$mods" AGENT_SUDO_TEST_CHROMIUM="$chromium" \
  timeout 330 go test -race -count=1 -timeout 300s -v ./test/web/
