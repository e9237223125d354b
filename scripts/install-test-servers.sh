#!/usr/bin/env bash
# Installs the real upstream MCP servers that the integration tests start, under
# .cache/servers/ (git-ignored). Idempotent: a second run only checks what is there.
#
#   node/        npm packages, one node_modules for all (`npm install --prefix`)
#   time/ git/   one venv per Python server: they pin their own `mcp`, not ours
#   word/        office-word-mcp-server, optional (a real upstream that writes junk to stdout)
#
# Only PyPI and npm are reached. Override the location with MCP_ROUTER_SERVERS_DIR,
# the interpreter for the venvs with PYTHON.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${MCP_ROUTER_SERVERS_DIR:-$ROOT/.cache/servers}"
PYTHON="${PYTHON:-python3}"

NPM_PACKAGES=(
  "@modelcontextprotocol/server-everything"
  "@modelcontextprotocol/server-memory"
  "@modelcontextprotocol/server-filesystem"
  "@modelcontextprotocol/server-github"  # archived: speaks only 2024-11-05
)

log() { printf 'install-test-servers: %s\n' "$*" >&2; }

# pip warns once per package about local index folders this machine's pip.conf may name
# but lack; keep its real errors, drop that noise. pipefail keeps pip's exit status.
quiet_pip() {
  "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2
}

install_npm() {
  local node_dir="$DEST/node"
  # The stamp is written only after a complete install: an interrupted one is redone.
  local stamp="$node_dir/.installed" wanted="${NPM_PACKAGES[*]}"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
    log "npm servers already in $node_dir"
    return
  fi
  command -v npm >/dev/null || { log "npm not found: install Node.js 20+"; return 1; }
  mkdir -p "$node_dir"
  log "npm install ${NPM_PACKAGES[*]} -> $node_dir"
  # --prefer-offline reuses the npm cache; --no-audit/--no-fund skip extra registry calls.
  npm install --prefix "$node_dir" --no-audit --no-fund --prefer-offline --loglevel=error \
    "${NPM_PACKAGES[@]}" >&2
  printf '%s' "$wanted" >"$stamp"
}

# install_venv NAME PACKAGE ENTRYPOINT [optional]
install_venv() {
  local name="$1" package="$2" entry="$3" optional="${4:-}"
  local venv="$DEST/$name"
  if [[ -x "$venv/bin/$entry" ]]; then
    log "$package already in $venv"
    return
  fi
  log "pip install $package -> $venv"
  rm -rf "$venv"
  if "$PYTHON" -m venv "$venv" >&2 \
    && quiet_pip "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$package" \
    && [[ -x "$venv/bin/$entry" ]]; then
    return
  fi
  rm -rf "$venv"
  if [[ -n "$optional" ]]; then
    log "WARNING: optional $package did not install; tests that need it will skip"
    return
  fi
  log "ERROR: $package did not install"
  return 1
}

mkdir -p "$DEST"
install_npm
install_venv time mcp-server-time mcp-server-time
install_venv git mcp-server-git mcp-server-git
install_venv word office-word-mcp-server word_mcp_server optional

# What the tests look for, one line each, on stdout.
node_modules="$DEST/node/node_modules/@modelcontextprotocol"
for entry in \
  "everything=$node_modules/server-everything/dist/index.js" \
  "memory=$node_modules/server-memory/dist/index.js" \
  "filesystem=$node_modules/server-filesystem/dist/index.js" \
  "github=$node_modules/server-github/dist/index.js" \
  "time=$DEST/time/bin/mcp-server-time" \
  "git=$DEST/git/bin/mcp-server-git" \
  "word=$DEST/word/bin/word_mcp_server"; do
  path="${entry#*=}"
  if [[ -e "$path" ]]; then state="ok"; else state="MISSING"; fi
  printf '%-10s %-8s %s\n' "${entry%%=*}" "$state" "$path"
done
