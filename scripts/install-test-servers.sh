#!/usr/bin/env bash
# Installs the real upstream MCP servers that the integration tests start, under
# .cache/servers/ (git-ignored). Idempotent: a second run only checks what is there.
#
#   tests/       npm packages, installed with `npm ci` from scripts/servers/tests/package-lock.json
#   time/ git/ fetch/   one venv per Python server: they pin their own `mcp`, not ours
#   word/        office-word-mcp-server, optional (a real upstream that writes junk to stdout)
#
# Only PyPI and npm are reached. Override the location with MCP_ROUTER_SERVERS_DIR,
# the interpreter for the venvs with PYTHON. The helpers are in scripts/lib/install-servers.sh.
set -euo pipefail

LOG_TAG=install-test-servers
# shellcheck source=lib/install-servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-servers.sh"

mkdir -p "$DEST"
# everything, memory, filesystem, github, and the inspector (a real client; 0.15.0 is the
# line whose CLI runs on node 20), apart from the example servers' own folder
install_npm_locked tests
install_venv time mcp-server-time==2026.10.19 mcp-server-time
install_venv git mcp-server-git==2026.10.19 mcp-server-git
# completes the example set the serve tests start
install_venv fetch mcp-server-fetch==2026.10.24 mcp-server-fetch
install_venv word office-word-mcp-server==1.1.11 word_mcp_server optional

# What the tests look for, one line each, on stdout.
report \
  "everything=$(npm_script tests server-everything)" \
  "memory=$(npm_script tests server-memory)" \
  "filesystem=$(npm_script tests server-filesystem)" \
  "github=$(npm_script tests server-github)" \
  "inspector=$DEST/tests/node_modules/.bin/mcp-inspector" \
  "time=$DEST/time/bin/mcp-server-time" \
  "git=$DEST/git/bin/mcp-server-git" \
  "fetch=$DEST/fetch/bin/mcp-server-fetch" \
  "word=$DEST/word/bin/word_mcp_server"
