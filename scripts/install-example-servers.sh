#!/usr/bin/env bash
# Installs the servers that examples/servers.json starts, under .cache/servers/ (git-ignored):
# from PyPI mcp-server-time, mcp-server-git and mcp-server-fetch (one venv each), from npm
# @modelcontextprotocol/server-everything, -memory and -filesystem (in .cache/servers/node).
# Idempotent; shares its folder and helpers (scripts/lib/install-servers.sh) with the
# test servers, so what one script installed the other reuses.
set -euo pipefail

LOG_TAG=install-example-servers
# shellcheck source=lib/install-servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-servers.sh"

mkdir -p "$DEST"
install_npm \
  "@modelcontextprotocol/server-everything" \
  "@modelcontextprotocol/server-memory" \
  "@modelcontextprotocol/server-filesystem"
install_venv time mcp-server-time mcp-server-time
install_venv git mcp-server-git mcp-server-git
install_venv fetch mcp-server-fetch mcp-server-fetch

bin="$DEST/node/node_modules/.bin"
report \
  "everything=$bin/mcp-server-everything" \
  "memory=$bin/mcp-server-memory" \
  "filesystem=$bin/mcp-server-filesystem" \
  "time=$DEST/time/bin/mcp-server-time" \
  "git=$DEST/git/bin/mcp-server-git" \
  "fetch=$DEST/fetch/bin/mcp-server-fetch"
