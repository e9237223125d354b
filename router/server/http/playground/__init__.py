"""The playground: a page at `/` where a person types a query and sees what the router would
list for it (each tool's rank, scores and schema), what that saves in the three tool formats,
and each upstream's health.

Plain HTML, CSS and JavaScript shipped in this package (no build step, nothing fetched from
elsewhere). The page holds no data of its own: its script asks the REST API (`/v1/route`,
`/v1/tools`, `/healthz`) with `fetch`, sending the bearer token a person types into it. So the
page and its two files are the only paths `GuardMiddleware` serves without the token (Host and
Origin are checked as everywhere); every API call still needs it.

Upstream text (names, descriptions, schemas, errors) is untrusted: the script only ever sets
it as `textContent`, and the Content-Security-Policy below allows no inline script, no other
origin and no framing, so markup in a description could not run even if it slipped through.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

PAGE_PATH = "/"
ASSET_PREFIX = "/playground/"
_ASSETS = {
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
PUBLIC_PATHS = frozenset({PAGE_PATH, *(ASSET_PREFIX + name for name in _ASSETS)})
"""The paths served without the bearer token (GET and HEAD only)."""

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _File:
    """One packaged file, read once when the routes are built."""

    def __init__(self, name: str, media_type: str) -> None:
        self.body = resources.files(__name__).joinpath(name).read_bytes()
        self.media_type = media_type

    async def respond(self, request: Request) -> Response:
        return Response(self.body, media_type=self.media_type, headers=HEADERS)


def playground_routes() -> list[BaseRoute]:
    """`GET /` (the page) and `GET /playground/*.js|css` (its script and style sheet)."""
    files = {PAGE_PATH: _File("index.html", "text/html; charset=utf-8")}
    files.update({ASSET_PREFIX + name: _File(name, kind) for name, kind in _ASSETS.items()})
    return [
        Route(path, file.respond, methods=["GET", "HEAD"], include_in_schema=False)
        for path, file in files.items()
    ]
