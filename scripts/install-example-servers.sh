#!/usr/bin/env bash
# Installs the servers that examples/servers.json starts, under .cache/servers/ (git-ignored):
# from PyPI mcp-server-time, mcp-server-git and mcp-server-fetch (one venv each), from npm
# @modelcontextprotocol/server-everything, -memory and -filesystem (in .cache/servers/examples,
# `npm ci` from scripts/servers/examples/package-lock.json). Idempotent. The npm folder is
# its own: the test servers' install (scripts/install-test-servers.sh) never changes what
# `make run` serves. The PyPI venvs are pinned to the same versions in both scripts.
set -euo pipefail

LOG_TAG=install-example-servers
# shellcheck source=lib/install-servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-servers.sh"

mkdir -p "$DEST"
install_npm_locked examples
install_venv time mcp-server-time==2026.10.19 mcp-server-time
install_venv git mcp-server-git==2026.10.19 mcp-server-git
install_venv fetch mcp-server-fetch==2026.10.24 mcp-server-fetch

bin="$DEST/examples/node_modules/.bin"
report \
  "everything=$bin/mcp-server-everything" \
  "memory=$bin/mcp-server-memory" \
  "filesystem=$bin/mcp-server-filesystem" \
  "time=$DEST/time/bin/mcp-server-time" \
  "git=$DEST/git/bin/mcp-server-git" \
  "fetch=$DEST/fetch/bin/mcp-server-fetch"
