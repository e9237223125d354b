"""What a server is, for its pins: a digest of what its entry starts or reaches.

Pins are kept per (origin, server name, tool), so two configs sharing a cache folder (or a
store namespace) that give one name to different servers keep apart pins, while the same
entry across restarts and replicas keeps its own, and still holds a rug pull. An upgrade in
place (the same command, a newer package under it) is the same origin: its changed tools are
held for review. A different program is another origin: its tools are trusted on first use,
as a new server's are.

What counts:
- a local server: `command` (as the config resolves it: relative to the config's folder,
  a bare name as written, not looked up on PATH, which differs between shells), `args` (as
  loaded: a `${VAR}` in one counts as its value, so an argument filled from a variable that
  changes per run makes a new origin each run, trusted on first use; keep such values in
  `env`) and `cwd` (resolved against the config's folder) when set. Unset, the child runs in the
  router's own working directory, which differs with whoever starts the router; it is left
  out, so the same entry started from another directory keeps its pins.
- a remote server: the URL's scheme, host, port (the scheme's default when none is written)
  and path. Left out: the user info, the query and the fragment (where API keys and
  per-session values travel), the headers and the transport.
- never `env` or headers: their values hold credentials and change per run (tokens, temp
  folders, ports), and rarely decide which program runs. Leaving something out errs towards
  holding: two entries that differ only there hold each other's changed tools until
  approved, never trust each other's.

A server without an origin (pins opened without a config) is keyed by its name alone, the
key every pin had before origins (`LEGACY`); such rows are adopted by the first origin of
that name that reads them (`router.pinning.store`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from router.config import RemoteServer, RouterConfig, StdioServer

LEGACY = ""
"""The origin of a pin recorded by name alone (before origins, or without a config)."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(server: StdioServer | RemoteServer) -> str:
    """A stable digest (32 hex characters) of what `server` starts or reaches."""
    target: dict[str, Any]
    if isinstance(server, StdioServer):
        target = {
            "command": server.command,
            "args": list(server.args),
            "cwd": str(server.cwd) if server.cwd is not None else None,
        }
    else:
        parts = urlsplit(server.url)
        scheme = parts.scheme.lower()
        try:
            port = str(parts.port or _DEFAULT_PORTS.get(scheme, 0))
        except ValueError:  # not a number: the connection fails anyway; keep it as written
            port = parts.netloc.rpartition(":")[2]
        host = (parts.hostname or "").lower()
        target = {"url": f"{scheme}://{host}:{port}{parts.path.rstrip('/') or '/'}"}
    text = json.dumps(target, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def origins_of(config: RouterConfig) -> Mapping[str, str]:
    """Every server entry's origin, by name (disabled ones too: `tools review` names them)."""
    return {name: origin_of(server) for name, server in config.servers.items()}
