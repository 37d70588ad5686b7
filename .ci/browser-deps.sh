#!/usr/bin/env bash
# Chromium for the browser tests (tests/browser): Debian's package, launched by the Python playwright client
# (pinned in requirements.txt) through executable_path; Playwright's own browser download is never used.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "chromium already installed: $(chromium --version 2>/dev/null || echo present)"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update
$SUDO apt-get install -y chromium
