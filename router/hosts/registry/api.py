"""The registry's REST API (`/v0.1`, the official `https://registry.modelcontextprotocol.io`
or any registry of the same shape at `--registry URL`): search, a server's versions, and one
version's `server.json`. Names hold a `/`, sent encoded (`%2F`); older registries' envelopes
(`next_cursor`, a server without the `{"server": ...}` wrapper) read the same."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2

from router.core.errors import ConfigError

__all__ = ["DEFAULT_REGISTRY", "MAX_PAGES", "Registry", "read_source"]

DEFAULT_REGISTRY = "https://registry.modelcontextprotocol.io"
_SERVER_NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
"""The registry's server names (`io.github.owner/server`)."""
API = "/v0.1"
MAX_PAGES = 10
"""Pages of a search followed at most (100 servers each)."""
TIMEOUT = 30.0


class Registry:
    """One registry's API, read with a bounded client."""

    def __init__(self, base: str = DEFAULT_REGISTRY, client: httpx2.Client | None = None) -> None:
        self.base = base.rstrip("/")
        self._client = client or httpx2.Client(timeout=TIMEOUT, follow_redirects=True)

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        url = f"{self.base}{API}{path}"
        try:
            answer = self._client.get(url, params=dict(params or {}))
        except httpx2.HTTPError as exc:
            raise ConfigError(f"{url}: the registry did not answer ({exc})") from None
        if answer.status_code == 404:
            raise ConfigError(f"{url}: not in the registry (404)")
        if answer.status_code != 200:
            raise ConfigError(f"{url}: the registry answered {answer.status_code}")
        try:
            return answer.json()
        except ValueError:
            raise ConfigError(f"{url}: the registry's answer is not JSON") from None

    def server(self, name: str, version: str = "latest") -> dict[str, Any]:
        """One version's answer (`{"server": server.json, "_meta": ...}`)."""
        found = self._get(f"/servers/{quote(name, safe='')}/versions/{quote(version, safe='')}")
        if not isinstance(found, dict):
            raise ConfigError(f"{name}: the registry's answer is not an object")
        return found

    def versions(self, name: str) -> list[str]:
        listed = self._get(f"/servers/{quote(name, safe='')}/versions")
        return [str(_server(item).get("version")) for item in _items(listed)]

    def search(self, term: str, limit: int = 100) -> list[dict[str, Any]]:
        """The latest version of every server whose name holds `term`."""
        found: list[dict[str, Any]] = []
        params: dict[str, Any] = {"search": term, "version": "latest", "limit": min(limit, 100)}
        for _ in range(MAX_PAGES):
            page = self._get("/servers", params)
            found += [_server(item) for item in _items(page)]
            metadata = page.get("metadata") if isinstance(page, dict) else None
            cursor = _cursor(metadata)
            if not cursor or len(found) >= limit:
                break
            params["cursor"] = cursor
        return found[:limit]


def _items(page: Any) -> list[Any]:
    servers = page.get("servers") if isinstance(page, dict) else None
    return servers if isinstance(servers, list) else []


def _server(item: Any) -> dict[str, Any]:
    inner = item.get("server", item) if isinstance(item, dict) else {}
    return inner if isinstance(inner, dict) else {}


def _cursor(metadata: Any) -> str | None:
    if not isinstance(metadata, dict):
        return None
    cursor = metadata.get("nextCursor", metadata.get("next_cursor"))
    return str(cursor) if cursor else None


def read_source(source: str, registry: Registry) -> Any:
    """A server.json from a file, an http(s) URL, or the registry by its server name."""
    if source.startswith(("http://", "https://")):
        try:
            answer = httpx2.get(source, timeout=TIMEOUT, follow_redirects=True)
        except httpx2.HTTPError as exc:
            raise ConfigError(f"{source}: did not answer ({exc})") from None
        if answer.status_code != 200:
            raise ConfigError(f"{source}: answered {answer.status_code}")
        try:
            return answer.json()
        except ValueError:
            raise ConfigError(f"{source}: not JSON") from None
    path = Path(source).expanduser()
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"{path}: not a readable server.json ({exc})") from None
    if _SERVER_NAME.match(source):  # a server name: io.github.owner/server
        return registry.server(source)
    raise ConfigError(
        f"{source}: no such file. Fix: pass a server.json file, its URL, or a registry name "
        "such as io.github.owner/server."
    )
