# Shared by scripts/install-test-servers.sh and scripts/install-example-servers.sh: installs
# real MCP servers from npm and PyPI under one folder (git-ignored .cache/servers/ by default).
# Source it, then call install_npm / install_venv / report. Only PyPI and npm are reached.
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

# install_npm PACKAGE... : one node_modules ($DEST/node) for all npm servers. The stamp
# lists every package a complete install put there (written only after it succeeded, so
# an interrupted install is redone); each script asks only for its own packages.
install_npm() {
  local node_dir="$DEST/node"
  local stamp="$node_dir/.installed"
  local have=() missing=() package
  [[ -f "$stamp" ]] && read -r -d '' -a have <"$stamp" || true
  for package in "$@"; do
    [[ " ${have[*]} " == *" $package "* ]] || missing+=("$package")
  done
  if ((${#missing[@]} == 0)); then
    log "npm servers already in $node_dir"
    return
  fi
  command -v npm >/dev/null || { log "npm not found: install Node.js 20+"; return 1; }
  mkdir -p "$node_dir"
  log "npm install ${missing[*]} -> $node_dir"
  # --prefer-offline reuses the npm cache; --no-audit/--no-fund skip extra registry calls.
  # Packages already in $node_dir's package.json stay installed.
  npm install --prefix "$node_dir" --no-audit --no-fund --prefer-offline --loglevel=error \
    "${missing[@]}" >&2
  printf '%s\n' "${have[@]}" "${missing[@]}" >"$stamp"
}

# install_venv NAME PACKAGE ENTRYPOINT [optional] : one venv per Python server, since
# they pin their own `mcp`, not ours.
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

# npm_script PACKAGE : where an @modelcontextprotocol server's entry point lies.
npm_script() { printf '%s' "$DEST/node/node_modules/@modelcontextprotocol/$1/dist/index.js"; }

# report NAME=PATH... : one line per server on stdout: name, ok or MISSING, path.
report() {
  local entry path state
  for entry in "$@"; do
    path="${entry#*=}"
    if [[ -e "$path" ]]; then state="ok"; else state="MISSING"; fi
    printf '%-10s %-8s %s\n' "${entry%%=*}" "$state" "$path"
  done
}
