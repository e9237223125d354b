"""The HTTP front: one FastAPI app serving the routed MCP server (streamable HTTP at `/mcp`,
legacy SSE at `/sse` + `/messages/`), the REST API (`/v1/route`, `/v1/search`,
`/v1/tools`, `/healthz`) and the playground page at `/`, behind the `GuardMiddleware`.

The app's lifespan owns everything, once for all sessions: it starts the upstream pool and
the index (`router_state`), builds the MCP server around that state, and runs the SDK's
session manager; leaving it ends the sessions, then the upstreams.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.security import HTTPBearer
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from starlette.responses import Response

from router import __version__
from router.config import RouterConfig
from router.core.errors import RouterError
from router.embedding.base import Embedder
from router.server.http.auth.authorize import authorize_rest
from router.server.http.auth.guard import GuardMiddleware
from router.server.http.auth.resource_metadata import metadata_paths, metadata_routes
from router.server.http.auth.security import SecurityPolicy
from router.server.http.batching import QueryBatcher
from router.server.http.errors import error_response, is_mcp_path
from router.server.http.front import FrontState, ReadyLatch
from router.server.http.mcp_endpoints import McpEndpoints, mcp_routes
from router.server.http.metrics_endpoint import count_rest_request, metrics_api
from router.server.http.personal_auth import personal_api
from router.server.http.playground import PUBLIC_PATHS, playground_routes
from router.server.http.rest import api
from router.server.http.routing import ListCosts
from router.server.http.search import search_api
from router.server.http.sign_in_callback import sign_in_routes
from router.server.lifecycle.app import build_server, router_state
from router.upstream.personal.key_entry import KEYS_ROUTE
from router.upstream.personal.pending import CALLBACK_ROUTE
from router.upstream.personal.tickets import START_ROUTE

logger = logging.getLogger(__name__)

DESCRIPTION = """\
A tool-routing MCP gateway. MCP clients connect to `/mcp` (streamable HTTP) or `/sse`
(legacy HTTP+SSE; messages go to `/messages/`): those speak JSON-RPC and are not described
here. Hosts that route tools themselves ask `POST /v1/route`; applications that call the
Anthropic or OpenAI API directly answer their model's tool search from `POST /v1/search`.

Every request passes the Host and Origin allow-lists and, when the router has a token,
must carry `Authorization: Bearer <token>`; with `router.http.oauth`, an access token the
issuer gave for this router (its metadata at `/.well-known/oauth-protected-resource`).
Bodies over the size limit get 413.
"""


def create_app(
    config: RouterConfig,
    embedder: Embedder | None,
    policy: SecurityPolicy,
    *,
    read_config: Callable[[], RouterConfig] | None = None,
) -> FastAPI:
    """The front for `config`; serve it with any ASGI server (`serve_http` uses uvicorn).
    With `read_config` the config file is applied while serving
    (`router.server.lifecycle.reload`)."""

    # Many sessions rank at once: their query embeddings share model calls.
    shared = QueryBatcher(embedder) if embedder is not None else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[FrontState]:
        async with router_state(config, shared, read_config=read_config) as state:
            state.metrics.serve()  # /metrics is served: count, what listings save included
            server = build_server(config, shared, state=state)
            endpoints = McpEndpoints(server, policy.max_body_bytes)
            async with endpoints.run():
                yield FrontState(
                    router=state, mcp=endpoints, costs=ListCosts(), readiness=ReadyLatch()
                )

    app = FastAPI(
        title="mcp-router",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        # The one door (`router.server.access.authorization`) first, then the count for /metrics.
        dependencies=[Depends(authorize_rest), Depends(count_rest_request)],
    )
    # Documents the scheme in OpenAPI; GuardMiddleware enforces it (on MCP endpoints too).
    bearer = [Depends(HTTPBearer(auto_error=False))] if policy.guarded else []
    app.include_router(api, dependencies=bearer)
    app.include_router(search_api, dependencies=bearer)
    app.include_router(metrics_api, dependencies=bearer)
    app.include_router(personal_api, dependencies=bearer)
    app.router.routes.extend(mcp_routes())
    app.router.routes.extend(playground_routes())
    app.router.routes.extend(sign_in_routes())
    # /healthz's detail needs a credential, its status not; a sign-in's browser has none
    public = PUBLIC_PATHS | {"/healthz", CALLBACK_ROUTE, START_ROUTE, KEYS_ROUTE}
    if policy.tokens is not None:  # clients read where to get a token before they have one
        app.router.routes.extend(metadata_routes(policy.tokens.settings))
        public = public | metadata_paths(policy.tokens.settings)
    app.add_exception_handler(RouterError, _router_error)
    app.add_exception_handler(Exception, _internal_error)
    # Inside the guard: the verified principal becomes the SDK's auth context, which its
    # dispatcher hands on to the handler of each message.
    app.add_middleware(AuthContextMiddleware)
    # The playground's page and files hold no data: they load without the token.
    forms = frozenset({KEYS_ROUTE})  # a key's form: its route checks its cookie and CSRF token
    app.add_middleware(GuardMiddleware, policy=policy, public_paths=public, public_forms=forms)
    return app


async def _router_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RouterError)
    logger.warning("%s %s failed: %s", request.method, request.url.path, exc)
    return error_response(exc, mcp=is_mcp_path(request.url.path))


async def _internal_error(request: Request, exc: Exception) -> Response:
    logger.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(RouterError("internal error"), mcp=is_mcp_path(request.url.path))
