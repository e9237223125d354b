# Shared by scripts/install-test-servers.sh and scripts/install-example-servers.sh: installs
# real MCP servers from npm and PyPI under one folder (git-ignored .cache/servers/ by default).
# Source it, then call install_npm_locked / install_venv / report. Only PyPI and npm are reached.
#
#   DEST    where the servers go (MCP_ROUTER_SERVERS_DIR, default .cache/servers)
#   PYTHON  the interpreter for the venvs (default python3)
#   LOG_TAG the name log lines carry

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="${MCP_ROUTER_SERVERS_DIR:-$ROOT/.cache/servers}"
PYTHON="${PYTHON:-python3}"
LOG_TAG="${LOG_TAG:-install-servers}"

log() { printf '%s: %s\n' "$LOG_TAG" "$*" >&2; }

# pip warns once per package about local index folders this machine's pip.conf may name
# but lack; keep its real errors, drop that noise. pipefail keeps pip's exit status.
quiet_pip() {
  "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2
}

# install_npm_locked NAME : the npm servers of scripts/servers/NAME/ (a package.json with
# exact versions and its committed package-lock.json) into $DEST/NAME with `npm ci`, so
# the same commit always installs the same tree, whatever else was installed before. Each
# script has its own folder: one install never re-hoists another's dependencies (in one
# shared node_modules, the test servers' inspector pulled zod 3 over the example servers'
# zod 4, and the example tools lost their parameter descriptions and bounds). The stamp
# holds the lockfile's checksum, written only after a complete install.
install_npm_locked() {
  local name="$1"
  local source="$ROOT/scripts/servers/$name" target="$DEST/$name"
  local stamp="$target/.installed" sum
  sum="$(sha256sum "$source/package-lock.json" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" && -d "$target/node_modules" ]]; then
    log "npm servers already in $target (lock ${sum:0:12})"
    return
  fi
  command -v npm >/dev/null || { log "npm not found: install Node.js 20+"; return 1; }
  rm -rf "$target"
  mkdir -p "$target"
  cp "$source/package.json" "$source/package-lock.json" "$target/"
  log "npm ci (scripts/servers/$name/package-lock.json) -> $target"
  # --prefer-offline reuses the npm cache; --no-audit/--no-fund skip extra registry calls.
  (cd "$target" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error >&2)
  printf '%s\n' "$sum" >"$stamp"
}

# install_venv NAME PACKAGE==VERSION ENTRYPOINT [optional] : one venv per Python server,
# since they pin their own `mcp`, not ours. Pinned, so both scripts install the same server
# into the same venv; the stamp holds the requirement, and another one reinstalls.
install_venv() {
  local name="$1" package="$2" entry="$3" optional="${4:-}"
  local venv="$DEST/$name"
  if [[ -x "$venv/bin/$entry" && "$(cat "$venv/.installed" 2>/dev/null)" == "$package" ]]; then
    log "$package already in $venv"
    return
  fi
  log "pip install $package -> $venv"
  rm -rf "$venv"
  if "$PYTHON" -m venv "$venv" >&2 \
    && quiet_pip "$venv/bin/python" -m pip install --quiet --no-compile \
      --disable-pip-version-check "$package" \
    && [[ -x "$venv/bin/$entry" ]]; then
    printf '%s\n' "$package" >"$venv/.installed"
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

# npm_script FOLDER PACKAGE : where an @modelcontextprotocol server's entry point lies.
npm_script() { printf '%s' "$DEST/$1/node_modules/@modelcontextprotocol/$2/dist/index.js"; }

# report NAME=PATH... : one line per server on stdout: name, ok or MISSING, path.
report() {
  local entry path state
  for entry in "$@"; do
    path="${entry#*=}"
    if [[ -e "$path" ]]; then state="ok"; else state="MISSING"; fi
    printf '%-10s %-8s %s\n' "${entry%%=*}" "$state" "$path"
  done
}
