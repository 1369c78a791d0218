#!/usr/bin/env bash
# Headless Chromium for the browser tests (tests/test_html_report.py, marker `browser`).
# Installs Debian's `chromium` package when no chromium is on PATH; prints the binary's path.
# Needs root (or sudo) and apt; anything else fails with a message saying so.
set -euo pipefail
find_chromium() { command -v chromium || command -v chromium-browser || true; }
bin=$(find_chromium)
if [ -z "$bin" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "_browser.sh: no chromium on PATH and no apt-get to install it" >&2; exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "_browser.sh: installing chromium needs root" >&2; exit 1; }
    sudo="sudo -n"
  fi
  echo "_browser.sh: installing chromium (Debian package) ..." >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
  bin=$(find_chromium)
  [ -n "$bin" ] || { echo "_browser.sh: chromium installed but not on PATH" >&2; exit 1; }
fi
echo "$bin"
