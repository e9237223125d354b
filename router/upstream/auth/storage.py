"""Upstream credentials: one private record per resource, changed whole, under its lock.

The record (`router.store.records`) is keyed by a hash of the resource: on one machine the
file `cache_dir/auth/<hash>.json` (0600 in a 0700 folder, written to a temporary file and
renamed into place); with `router.store`, a row of the shared store's `mcp_router_records`,
which every replica reads, so a sign-in on one replica (or `mcp-router auth login`) serves
them all. It holds the resource (the upstream's URL), the issuer its client was registered
with, that client and the tokens, as the file always did.

Every change is a read-modify-write under the record's lock, so two processes never undo
each other's; a token refresh holds that same lock from reading to storing the new token
(`router.upstream.auth.refresh`), and writes through it (`holding`). With a store, a
credentials file left in the cache folder (signed in before the store) fills the store once,
where it has none for that resource. A changed authorization server re-registers (the SDK
drops credentials bound to another issuer) and the record is rewritten for the new issuer.
Reads and writes run in a worker thread: never on the loop. Token values never reach a log
or an error: a record that cannot be parsed is named by its place, not shown.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from router.store.records import FileRecords, Held, Records

logger = logging.getLogger(__name__)

AUTH_FOLDER = "auth"
"""The records' kind, and the cache folder's subfolder for them."""

_HOLDING: ContextVar[tuple[str, str, Held] | None] = ContextVar("auth_record_held", default=None)
"""(place, key, held record) while a refresh holds a record's lock in this task: the SDK's
`set_tokens` inside it writes through the held lock instead of waiting for it."""


def auth_dir(cache_dir: Path) -> Path:
    return cache_dir / AUTH_FOLDER


def record_key(resource: str) -> str:
    return hashlib.sha256(resource.encode()).hexdigest()[:32]


def credentials_file(cache_dir: Path, resource: str) -> Path:
    return auth_dir(cache_dir) / f"{record_key(resource)}.json"


@dataclass(frozen=True, slots=True)
class StoredCredentials:
    """What one record says, for `auth status` (never the token values themselves)."""

    resource: str
    issuer: str | None
    client_id: str | None
    scope: str | None
    expires_at: float | None
    """Epoch seconds the access token expires, if the server said."""
    has_refresh: bool
    has_access: bool


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _parse(raw: bytes | None, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        logger.warning(
            "credentials at %s unreadable (%s); signing in again", where, type(exc).__name__
        )
        return {}
    return _mapping(data)


def expires_at(data: dict[str, Any]) -> float | None:
    """When the stored access token expires (epoch seconds), if the server said."""
    expires_in = _mapping(data.get("tokens")).get("expires_in")
    obtained = data.get("obtained_at")
    if isinstance(expires_in, int | float) and isinstance(obtained, int | float):
        return float(obtained + expires_in)
    return None


class TokenFiles:
    """The SDK's `TokenStorage` for one upstream resource, backed by its credentials record:
    the cache folder's file, or the shared store's row where `records` is the store's."""

    def __init__(
        self,
        cache_dir: Path,
        resource: str,
        records: Records | None = None,
        *,
        kind: str = AUTH_FOLDER,
        owner: str | None = None,
    ) -> None:
        """`kind` and `owner`: a per-user record (`router.upstream.personal`) is its own kind,
        keyed by the resource and its principal, and is never filled from the cache folder."""
        self.resource = resource
        self.kind = kind
        self.key = record_key(resource if owner is None else f"{resource}\x1e{owner}")
        self.path = credentials_file(cache_dir, resource)
        """The cache folder's file (with a store: only what fills the store once)."""
        files = FileRecords(cache_dir)
        self.records: Records = records if records is not None else files
        self._seed = files if self.records.shared and owner is None else None

    @property
    def where(self) -> str:
        return f"{self.records.where} ({self.kind}/{self.key})"

    # -- blocking: in a worker thread --------------------------------------------------------

    def read(self) -> dict[str, Any]:
        """The record as it is stored now (a held lock's view inside a refresh)."""
        held = self._held()
        if held is not None:
            return _parse(held.get(), self.where)
        raw = self.records.get(self.kind, self.key)
        if raw is None and self._seed is not None and self.path.exists():
            return self.change(lambda data: None)  # fills the store from the file
        return _parse(raw, self.where)

    def change(self, edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Read, `edit` in place and write back the record, under its lock; the result."""
        held = self._held()
        if held is not None:
            return self._change(held, edit)
        with self.records.locked(self.kind, self.key) as locked:
            return self._change(locked, edit)

    def _change(self, held: Held, edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        raw, seeded = held.get(), False
        if raw is None and self._seed is not None:
            raw = self._seed.get(AUTH_FOLDER, self.key)  # signed in before the store
            seeded = raw is not None
        data = _parse(raw, self.where)
        before = json.dumps(data, sort_keys=True)
        edit(data)
        if seeded or json.dumps(data, sort_keys=True) != before:
            data["resource"] = self.resource
            held.put(json.dumps(data).encode())
        return data

    def _held(self) -> Held | None:
        holding = _HOLDING.get()
        if holding is not None and holding[:2] == (self.records.where, self.key):
            return holding[2]
        return None

    @contextmanager
    def holding(self, held: Held) -> Iterator[None]:
        """Within this block (in this task), this record's reads and writes go through
        `held`, the lock a refresh took."""
        token = _HOLDING.set((self.records.where, self.key, held))
        try:
            yield
        finally:
            # closed from another context (a collected flow): that one never saw it set
            with contextlib.suppress(ValueError):
                _HOLDING.reset(token)

    def describe(self) -> StoredCredentials | None:
        """What is stored, blocking (for `auth status`); None when nothing is."""
        data = self.read()
        if not data:
            return None
        tokens = _mapping(data.get("tokens"))
        client = _mapping(data.get("client"))
        return StoredCredentials(
            resource=str(data.get("resource", self.resource)),
            issuer=data.get("issuer") or client.get("issuer"),
            client_id=client.get("client_id"),
            scope=tokens.get("scope"),
            expires_at=expires_at(data),
            has_refresh=bool(tokens.get("refresh_token")),
            has_access=bool(tokens.get("access_token")),
        )

    # -- the SDK's TokenStorage --------------------------------------------------------------

    async def _load(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.read)

    async def _update(self, **fields: Any) -> None:
        await anyio.to_thread.run_sync(self.change, lambda data: data.update(fields))

    async def get_tokens(self) -> OAuthToken | None:
        return tokens_of(await self._load())

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

        def drop(data: dict[str, Any]) -> None:
            if data.pop("tokens", None) is not None:
                data.pop("obtained_at", None)

        await anyio.to_thread.run_sync(self.change, drop)

    async def clear(self) -> bool:
        """Forget everything for this resource (with a store, the cache folder's file too);
        whether there was anything."""

        def remove() -> bool:
            found = self.records.delete(self.kind, self.key)
            if self._seed is not None:
                found = self._seed.delete(AUTH_FOLDER, self.key) or found
            return found

        return await anyio.to_thread.run_sync(remove)


def tokens_of(data: dict[str, Any]) -> OAuthToken | None:
    """The record's tokens, `expires_in` counted from now: the SDK counts it from when it
    loaded the token, so it must be what is left, or a restart (or another replica) would
    take an expired token for a fresh one."""
    raw = data.get("tokens")
    if not isinstance(raw, dict):
        return None
    tokens = OAuthToken.model_validate(raw)
    obtained = data.get("obtained_at")
    if tokens.expires_in is not None and isinstance(obtained, int | float):
        tokens.expires_in = max(0, int(obtained + tokens.expires_in - time.time()))
    return tokens
