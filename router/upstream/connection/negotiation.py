"""Which protocol era to open an upstream with, and remembering what worked.

The SDK's `mode="auto"` sends `server/discover` first and waits up to 10 s for a server that
ignores it before falling back to `initialize`. An upstream pays that at most once: the
outcome is remembered per upstream (in memory, and in a file when one is given), and the
next connect opens directly with `legacy` or the modern version it negotiated.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import anyio
import anyio.to_thread
import mcp_types as types
from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.config import RemoteServer, StdioServer

logger = logging.getLogger(__name__)


def upstream_key(name: str, server: StdioServer | RemoteServer) -> str:
    """Identity of an upstream for the memory: a changed command or URL starts afresh."""
    target = [server.command, *server.args] if isinstance(server, StdioServer) else [server.url]
    digest = hashlib.sha256(json.dumps(target).encode()).hexdigest()[:16]
    return f"{name}:{digest}"


class ProtocolMemory:
    """Connect modes that worked (`legacy` or a modern version), by `upstream_key`."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._modes: dict[str, str] = {}
        if path is not None:
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                loaded = {}
            if isinstance(loaded, dict):
                self._modes = {k: v for k, v in loaded.items() if _valid_mode(v)}

    def recall(self, key: str) -> str | None:
        return self._modes.get(key)

    async def remember(self, key: str, mode: str) -> None:
        if self._modes.get(key) == mode:
            return
        self._modes[key] = mode
        await self._save()

    async def forget(self, key: str) -> None:
        if self._modes.pop(key, None) is not None:
            await self._save()

    async def _save(self) -> None:
        if self._path is None:
            return
        path, text = self._path, json.dumps(self._modes, indent=1, sort_keys=True)
        try:
            await anyio.to_thread.run_sync(_write_atomically, path, text)
        except OSError as exc:
            logger.warning("cannot save upstream protocol memory to %s: %s", path, exc)


def _valid_mode(mode: object) -> bool:
    return mode == "legacy" or mode in MODERN_PROTOCOL_VERSIONS


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(path.suffix + ".tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(path)


def choose_mode(setting: str, remembered: str | None) -> str:
    """The `Client(mode=...)` to open with: a fixed setting wins, then memory, then `auto`."""
    if setting != "auto":
        return setting
    return remembered or "auto"


def negotiated_mode(client: Client) -> str:
    """What to remember after a connect: `legacy`, or the modern version adopted."""
    if client.session.initialize_result is not None:
        return "legacy"
    return client.protocol_version


async def adopt_discover(client: Client, version: str) -> None:
    """Fetch the real `server/discover` result after opening directly at a modern version.

    `Client(mode=version)` adopts a synthesized result with no capabilities; one discover
    round trip (no fallback wait: the server is known to be modern) gets the real ones.

    Raises:
        MCPError: The server rejected `server/discover`.
        pydantic.ValidationError: The answer is not a discover result.
    """
    raw = await client.session.send_discover(version)
    client.session.adopt(types.DiscoverResult.model_validate(raw))
