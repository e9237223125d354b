"""The front's protected resource metadata (RFC 9728) and the `WWW-Authenticate` challenge
that points clients to it, as the MCP authorization specification asks of a server.

The document is served at `/.well-known/oauth-protected-resource` and at the path-suffixed
form for the resource's own path (`/.well-known/oauth-protected-resource/mcp`), without a
token: a client reads it before it has one. Its `resource` is the configured audience and its
authorization server the configured issuer.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route

from router.config.identity import FrontOAuth

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(settings: FrontOAuth) -> str:
    """Where clients find the metadata: the path-suffixed form on the resource's origin."""
    return str(build_resource_metadata_url(AnyHttpUrl(settings.audience)))


def metadata_paths(settings: FrontOAuth) -> frozenset[str]:
    return frozenset({WELL_KNOWN, urlsplit(metadata_url(settings)).path})


def metadata_routes(settings: FrontOAuth) -> list[Route]:
    metadata = ProtectedResourceMetadata(
        resource=AnyHttpUrl(settings.audience),
        authorization_servers=[AnyHttpUrl(settings.issuer)],
        scopes_supported=settings.scopes or None,
        resource_name="mcp-router",
    )
    handler = ProtectedResourceMetadataHandler(metadata)
    return [
        Route(path, endpoint=handler.handle, methods=["GET"])
        for path in sorted(metadata_paths(settings))
    ]


def challenge(
    settings: FrontOAuth, *, error: str | None = None, description: str | None = None
) -> str:
    """The `WWW-Authenticate` value of a 401 or 403 (RFC 6750 section 3, RFC 9728 section 5.1):
    no `error` when the request carried no token at all."""
    parts = []
    if error is not None:
        parts.append(f'error="{error}"')
        if description:
            parts.append(f'error_description="{_quotable(description)}"')
    if settings.scopes:
        parts.append(f'scope="{" ".join(settings.scopes)}"')
    parts.append(f'resource_metadata="{metadata_url(settings)}"')
    return "Bearer " + ", ".join(parts)


def _quotable(text: str) -> str:
    """RFC 6750 allows printable ASCII but `"` and `\\` in an error description."""
    return "".join(ch for ch in text if 0x20 <= ord(ch) < 0x7F and ch not in '"\\')[:200]
