"""Upstream credentials on disk: one file per resource, 0600 in a 0700 folder, written whole.

`cache_dir/auth/<hash of the resource>.json` holds the resource (the upstream's URL), the
issuer its client was registered with, that client and the tokens. A changed authorization
server re-registers (the SDK drops credentials bound to another issuer) and the file is
rewritten for the new issuer. Reads and writes run in a worker thread: never on the loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

logger = logging.getLogger(__name__)

AUTH_FOLDER = "auth"


def auth_dir(cache_dir: Path) -> Path:
    return cache_dir / AUTH_FOLDER


def credentials_file(cache_dir: Path, resource: str) -> Path:
    digest = hashlib.sha256(resource.encode()).hexdigest()[:32]
    return auth_dir(cache_dir) / f"{digest}.json"


@dataclass(frozen=True, slots=True)
class StoredCredentials:
    """What one file says, for `auth status` (never the token values themselves)."""

    resource: str
    issuer: str | None
    client_id: str | None
    scope: str | None
    expires_at: float | None
    """Epoch seconds the access token expires, if the server said."""
    has_refresh: bool
    has_access: bool


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning(
            "credentials file %s unreadable (%s); signing in again", path, type(exc).__name__
        )
        return {}
    return data if isinstance(data, dict) else {}


def write_private(path: Path, data: dict[str, Any]) -> None:
    """Atomically, never readable by others for an instant: a 0600 temporary file in the
    0700 folder, then `os.replace`."""
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    descriptor, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class TokenFiles:
    """The SDK's `TokenStorage` for one upstream resource, backed by its credentials file."""

    def __init__(self, cache_dir: Path, resource: str) -> None:
        self.resource = resource
        self.path = credentials_file(cache_dir, resource)

    async def _load(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(_read, self.path)

    async def _update(self, **fields: Any) -> None:
        def update() -> None:
            data = _read(self.path)
            data.update(fields, resource=self.resource)
            write_private(self.path, data)

        await anyio.to_thread.run_sync(update)

    async def get_tokens(self) -> OAuthToken | None:
        data = await self._load()
        raw = data.get("tokens")
        if not isinstance(raw, dict):
            return None
        tokens = OAuthToken.model_validate(raw)
        # The SDK counts `expires_in` from when it loaded the token; count it from when the
        # token was obtained, so a restart does not take an expired token for a fresh one.
        obtained = data.get("obtained_at")
        if tokens.expires_in is not None and isinstance(obtained, int | float):
            tokens.expires_in = max(0, int(obtained + tokens.expires_in - time.time()))
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._update(
            tokens=tokens.model_dump(mode="json", exclude_none=True), obtained_at=time.time()
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await self._load()).get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._update(
            client=client_info.model_dump(mode="json", exclude_none=True),
            issuer=client_info.issuer,
        )

    async def forget_tokens(self) -> None:
        """Drop the tokens, keep the client registration (and the redirect port it names)."""

        def drop() -> None:
            data = _read(self.path)
            if data.pop("tokens", None) is not None:
                data.pop("obtained_at", None)
                write_private(self.path, data)

        await anyio.to_thread.run_sync(drop)

    async def clear(self) -> bool:
        """Forget everything for this resource; whether there was anything."""

        def remove() -> bool:
            try:
                self.path.unlink()
            except FileNotFoundError:
                return False
            return True

        return await anyio.to_thread.run_sync(remove)

    def describe(self) -> StoredCredentials | None:
        """What is stored, blocking (for `auth status`); None when nothing is."""
        data = _read(self.path)
        if not data:
            return None
        tokens = _mapping(data.get("tokens"))
        client = _mapping(data.get("client"))
        expires_in, obtained = tokens.get("expires_in"), data.get("obtained_at")
        expires_at = (
            obtained + expires_in
            if isinstance(expires_in, int | float) and isinstance(obtained, int | float)
            else None
        )
        return StoredCredentials(
            resource=str(data.get("resource", self.resource)),
            issuer=data.get("issuer") or client.get("issuer"),
            client_id=client.get("client_id"),
            scope=tokens.get("scope"),
            expires_at=expires_at,
            has_refresh=bool(tokens.get("refresh_token")),
            has_access=bool(tokens.get("access_token")),
        )
