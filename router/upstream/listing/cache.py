"""Each upstream's last listing, kept in the cache folder or the shared store, so that a lazy
upstream's tools are searchable before it starts, and without starting it (`router.start`).

One record per upstream (`router.store.records`): a JSON file under `cache_dir/listings/`
(the folder 0700, each file 0600, written whole to a temporary file and renamed into place),
or with `router.store` a row of the store's `mcp_router_records`, so a replica started fresh
serves the listing another replica took. It holds the listing as the server sent it
(tools, resources, resource templates and prompts, unfiltered: the config's filters apply as
it is read), the server's identity and instructions, its protocol revision, the extensions it
declared and when it was taken. A file is keyed by the entry's connection identity
(`listing_key`: a hash of the command, arguments, environment and folder, or of the URL,
transport and headers), so an entry whose command or environment changed is never served
another's listing, and no configured value (an API key in `env`) is written.

A per-user upstream's listing is its principal's own (`router.upstream.personal`): it is never
kept here under the server's name. Each principal's is a record of its own (`owner`: kind
`user-listings`, keyed by a hash of the server's name and the principal's key), in records
that seal it like that principal's tokens.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import mcp_types as types
from pydantic import BaseModel, ValidationError

from router.config import RemoteServer, StdioServer
from router.core.errors import StoreError
from router.store.records import FileRecords, Records
from router.upstream.listing.fetch import Listing

logger = logging.getLogger(__name__)

LISTINGS_DIR = "listings"
PERSONAL_LISTINGS = "user-listings"
"""The kind of a principal's own listing of a per-user upstream (sealed records only)."""
_FORMAT = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def listing_key(server: StdioServer | RemoteServer) -> str:
    """A hash of what decides which server an entry reaches."""
    if isinstance(server, StdioServer):
        target: dict[str, Any] = {
            "command": server.command,
            "args": server.args,
            "env": server.env,
            "cwd": str(server.cwd) if server.cwd is not None else None,
        }
    else:
        target = {
            "url": server.url,
            "transport": server.effective_transport,
            "headers": server.headers,
        }
    return hashlib.sha256(json.dumps(target, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class CachedListing:
    """One complete listing of an upstream, as it connected."""

    listing: Listing
    server_info: types.Implementation | None = None
    instructions: str | None = None
    protocol_version: str | None = None
    listed_at: float = 0.0
    """Unix time of the listing."""
    extensions: tuple[str, ...] = ()
    """The extensions its `initialize` or `server/discover` answer declared (SEP-2133,
    `capabilities.extensions`), by identifier (`router.upstream.listing.known`)."""

    def to_json(self, name: str, key: str) -> str:
        listing = self.listing
        return json.dumps(
            {
                "format": _FORMAT,
                "server": name,
                "key": key,
                "listed_at": self.listed_at,
                "protocol_version": self.protocol_version,
                "server_info": _dump(self.server_info) if self.server_info else None,
                "instructions": self.instructions,
                "extensions": list(self.extensions),
                "tools": [_dump(tool) for tool in listing.tools],
                "resources": [_dump(resource) for resource in listing.resources],
                "resource_templates": [_dump(t) for t in listing.resource_templates],
                "prompts": [_dump(prompt) for prompt in listing.prompts],
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CachedListing:
        """Raises: ValidationError, KeyError, TypeError: not a listing file of this format."""
        info = data.get("server_info")
        return cls(
            Listing(
                tuple(types.Tool.model_validate(t) for t in data["tools"]),
                tuple(types.Resource.model_validate(r) for r in data["resources"]),
                tuple(types.ResourceTemplate.model_validate(t) for t in data["resource_templates"]),
                tuple(types.Prompt.model_validate(p) for p in data["prompts"]),
            ),
            types.Implementation.model_validate(info) if info else None,
            data.get("instructions"),
            data.get("protocol_version"),
            float(data["listed_at"]),
            tuple(str(e) for e in data.get("extensions", ())),  # absent in an older file
        )


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class ListingCache:
    """The listings of one cache folder (or of the shared store, `records`); with neither,
    nothing is kept. With `owner` (a principal's key), that principal's own listings, each
    a record of its own: `records` must then be sealed (`router.store.sealed_records`)."""

    def __init__(
        self, cache_dir: Path | None, records: Records | None = None, *, owner: str | None = None
    ) -> None:
        self._records = records or (FileRecords(cache_dir) if cache_dir is not None else None)
        self._owner = owner
        self._kind = LISTINGS_DIR if owner is None else PERSONAL_LISTINGS

    def _place(self, name: str) -> str:
        if self._owner is None:
            return self.key(name)
        return hashlib.sha256(f"{name}\x1f{self._owner}".encode()).hexdigest()[:40]

    @property
    def where(self) -> str | None:
        return self._records.where if self._records is not None else None

    @staticmethod
    def key(name: str) -> str:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        return f"{_UNSAFE.sub('_', name)[:80]}-{digest}"

    def load(self, name: str, server: StdioServer | RemoteServer) -> CachedListing | None:
        """`name`'s listing if one was kept for this very entry (blocking)."""
        if self._records is None:
            return None
        try:
            raw = self._records.get(self._kind, self._place(name))
        except (OSError, StoreError) as exc:
            logger.warning(
                "upstream %s: cached listing in %s unreadable (%s)", name, self.where, exc
            )
            return None
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            logger.warning(
                "upstream %s: cached listing in %s unreadable (%s)", name, self.where, exc
            )
            return None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            return None
        if data.get("key") != listing_key(server):
            return None  # another command, URL or environment: this listing is not its
        try:
            return CachedListing.from_json(data)
        except (ValidationError, KeyError, TypeError, ValueError) as exc:
            logger.warning("upstream %s: cached listing in %s unusable (%s)", name, self.where, exc)
            return None

    def forget(self, name: str) -> None:
        """Drop `name`'s kept listing, if any (blocking; a failure is logged)."""
        if self._records is None:
            return
        try:
            self._records.delete(self._kind, self._place(name))
        except (OSError, StoreError) as exc:
            logger.warning("upstream %s: cannot drop its listing in %s: %s", name, self.where, exc)

    async def save(
        self, name: str, server: StdioServer | RemoteServer, cached: CachedListing
    ) -> None:
        """Keep `cached` as `name`'s listing (in a worker thread; a failure is logged)."""
        records = self._records
        if records is None:
            return
        try:
            text = await anyio.to_thread.run_sync(cached.to_json, name, listing_key(server))
            await anyio.to_thread.run_sync(
                records.put, self._kind, self._place(name), text.encode("utf-8")
            )
        except (OSError, StoreError) as exc:
            logger.warning("upstream %s: cannot cache its listing in %s: %s", name, self.where, exc)


def now() -> float:
    """The time a listing is stamped with."""
    return time.time()
