#!/usr/bin/env bash
# Installs the real upstream MCP servers that the integration tests start, under
# .cache/servers/ (git-ignored). Idempotent: a second run only checks what is there.
#
#   node/        npm packages, one node_modules for all (`npm install --prefix`)
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
install_npm \
  "@modelcontextprotocol/server-everything" \
  "@modelcontextprotocol/server-memory" \
  "@modelcontextprotocol/server-filesystem" \
  "@modelcontextprotocol/server-github" \
  "@modelcontextprotocol/inspector"  # a real client; on node 20 npm picks 0.15.0 (its CLI)
install_venv time mcp-server-time mcp-server-time
install_venv git mcp-server-git mcp-server-git
install_venv fetch mcp-server-fetch mcp-server-fetch  # completes the example set the serve tests start
install_venv word office-word-mcp-server word_mcp_server optional

# What the tests look for, one line each, on stdout.
report \
  "everything=$(npm_script server-everything)" \
  "memory=$(npm_script server-memory)" \
  "filesystem=$(npm_script server-filesystem)" \
  "github=$(npm_script server-github)" \
  "inspector=$DEST/node/node_modules/.bin/mcp-inspector" \
  "time=$DEST/time/bin/mcp-server-time" \
  "git=$DEST/git/bin/mcp-server-git" \
  "fetch=$DEST/fetch/bin/mcp-server-fetch" \
  "word=$DEST/word/bin/word_mcp_server"
