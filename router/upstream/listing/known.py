"""The listing the router holds for one upstream: from its last connection, or, for a lazy
upstream that has not run yet, from the cache folder (`router.upstream.listing.cache`). The
config's filters are applied here; the tools are the catalog's `ToolSpec`s. The extensions
the server declared come with it (`inspect` names them)."""

from __future__ import annotations

import mcp_types as types
from mcp import Client

from router.core.catalog import ToolSpec
from router.upstream.listing.cache import CachedListing, now
from router.upstream.listing.convert import server_description, tool_spec
from router.upstream.listing.fetch import Listing
from router.upstream.listing.filtering import ToolFilter

MAX_EXTENSIONS = 32
"""Extensions kept of what one server declares."""
MAX_EXTENSION_ID = 128
"""The longest extension identifier kept."""


class KnownListing:
    """One upstream's last listing, as listed (`raw`) and as the router serves it."""

    def __init__(self, name: str, tool_filter: ToolFilter, description: str | None = None) -> None:
        self._name = name
        self._filter = tool_filter
        self._description = description
        """The config's `description` of the server, before what the server says itself."""
        self.raw: CachedListing | None = None
        """The whole listing as the server sent it, with its identity: what the cache keeps."""
        self.listing = Listing()
        """The listing as the SDK types it, tools filtered."""
        self.tools: tuple[ToolSpec, ...] = ()
        self.from_cache = False
        """Read from the cache folder: the server has not listed in this process."""

    @property
    def known(self) -> bool:
        return self.raw is not None

    @property
    def server_info(self) -> types.Implementation | None:
        return self.raw.server_info if self.raw else None

    @property
    def protocol_version(self) -> str | None:
        return self.raw.protocol_version if self.raw else None

    @property
    def extensions(self) -> tuple[str, ...]:
        """The extensions the server declared with this listing (identifiers)."""
        return self.raw.extensions if self.raw else ()

    def install(self, listed: CachedListing, *, from_cache: bool = False) -> None:
        """Adopt a listing (tools filtered) and the server's identity."""
        self.raw, self.from_cache = listed, from_cache
        own = server_description(listed.server_info, listed.instructions)
        about = "\n".join(p for p in (self._description, own) if p and p.strip()) or None
        whole = listed.listing
        tools = tuple(t for t in whole.tools if self._filter.allows(self._name, t.name))
        self.listing = Listing(tools, whole.resources, whole.resource_templates, whole.prompts)
        self.tools = tuple(tool_spec(self._name, tool, about) for tool in tools)

    def listed(self, client: Client, listing: Listing) -> None:
        """Adopt what a connection just listed."""
        info, version = client.server_info, client.protocol_version
        declared = declared_extensions(client.server_capabilities)
        self.install(CachedListing(listing, info, client.instructions, version, now(), declared))


def declared_extensions(capabilities: types.ServerCapabilities | None) -> tuple[str, ...]:
    """The identifiers under a server's `capabilities.extensions` (SEP-2133), sorted: at most
    `MAX_EXTENSIONS`, each printable and at most `MAX_EXTENSION_ID` characters (the server's
    own text, shown on a terminal by `inspect`)."""
    declared = (capabilities.extensions if capabilities is not None else None) or {}
    kept = (e for e in declared if len(e) <= MAX_EXTENSION_ID and e.isprintable())
    return tuple(sorted(kept))[:MAX_EXTENSIONS]
