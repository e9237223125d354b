"""What the router remembers of each client connection, for as long as it is open.

Connections are held weakly: a closed connection's memory goes with it, so the tables are
bounded by the open connections (`router.sdk.internals.connection_of` says which object
lives exactly that long).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from mcp.server.connection import Connection

from router.embedding.base import Vectors
from router.retrieval.usage import ToolKey


@dataclass(frozen=True, slots=True)
class LastSearch:
    """A connection's last `search_tools`: what a following call is learnt against."""

    query: str
    vector: Vectors
    shown: frozenset[ToolKey]


@dataclass
class ConnectionMemory:
    """Per connection: its dynamic-mode listing and its last search."""

    listed: weakref.WeakKeyDictionary[Connection, tuple[str, ...]] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    """Dynamic mode: the tools of the connection's last search result, which its listing holds."""
    last_search: weakref.WeakKeyDictionary[Connection, LastSearch] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    """What the connection's next successful call is learnt against (`router.learn`)."""
