"""The protocol revisions the SDK speaks, as plain strings: the config checks an upstream's
`protocol` against them without importing the SDK's types."""

from __future__ import annotations

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

__all__ = ["HANDSHAKE_PROTOCOL_VERSIONS", "MODERN_PROTOCOL_VERSIONS"]
