"""A team's MCP server (it trusts the team's identity provider, as `team_api.py` does) whose
work goes on after the call that started it, and asks its caller a question out of band: on
the session's own channel, naming no call, as a server that reports back later does.

Tools: `deliberate(topic)` starts the work in the server's own task group and answers at
once; the work waits until `conclude` is called (by anyone, on any session), then asks the
session it was started on (a form with one string field `answer`). `conclude()` releases
that work and answers with what its question got back: "accept: ANSWER", another action, or
"error CODE: MESSAGE"; it waits up to 10 s for the work to finish. `hold()` reports progress
once, then waits (up to 10 s) until the work has its answer: a call in flight meanwhile.

    python -m tests.upstreams.team_asking --issuer URL [--port 0]

prints `http://127.0.0.1:PORT/mcp` on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import anyio
import anyio.abc
import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from tests.upstreams.team_api import IssuerVerifier

WAIT = 10.0
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_events: dict[str, anyio.Event] = {}  # made in the event loop, on first use
_outcome: list[str] = []


def _event(name: str) -> anyio.Event:
    return _events.setdefault(name, anyio.Event())


@asynccontextmanager
async def _work_group(_: MCPServer) -> AsyncIterator[anyio.abc.TaskGroup]:
    """A task group that outlives every request."""
    async with anyio.create_task_group() as group:
        yield group
        group.cancel_scope.cancel()


async def _work(session: ServerSession, topic: str) -> None:
    await _event("conclude").wait()
    try:
        answer = await session.elicit_form(f"About {topic}: go on?", SCHEMA)  # no call named
    except MCPError as exc:
        _outcome.append(f"error {exc.code}: {exc.message}")
    else:
        said = (answer.content or {}).get("answer")
        _outcome.append(f"{answer.action}: {said}" if said is not None else answer.action)
    _event("done").set()


def build(port: int, issuer: str) -> MCPServer[anyio.abc.TaskGroup]:
    url = f"http://127.0.0.1:{port}/mcp"
    app = MCPServer(
        "team-asking",
        lifespan=_work_group,
        token_verifier=IssuerVerifier(issuer, url),
        auth=AuthSettings.model_validate(
            # the verifier checks the audience itself
            {"issuer_url": issuer, "resource_server_url": url, "validate_token_resource": False}
        ),
        log_level="WARNING",
    )

    @app.tool()
    async def deliberate(topic: str, ctx: Context) -> str:
        """Think about a topic at length, and ask the user before concluding."""
        group = cast(anyio.abc.TaskGroup, ctx.request_context.lifespan_context)
        group.start_soon(_work, ctx.session, topic)
        return "deliberating"

    @app.tool()
    async def conclude() -> str:
        """Let the pending deliberation ask its question; answer with what it got back."""
        _event("conclude").set()
        with anyio.move_on_after(WAIT):
            await _event("done").wait()
        return _outcome[0] if _outcome else "no deliberation finished"

    @app.tool()
    async def hold(ctx: Context) -> str:
        """Stay in flight until the deliberation has its answer."""
        await ctx.report_progress(0, 1, "holding")
        with anyio.move_on_after(WAIT):
            await _event("done").wait()
        return "held"

    return app


async def serve(port: int, issuer: str) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound: int = sock.getsockname()[1]
    app = build(bound, issuer).streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", timeout_graceful_shutdown=1
    )
    print(f"http://127.0.0.1:{bound}/mcp", flush=True)
    await uvicorn.Server(config).serve([sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--issuer", required=True, help="the identity provider's issuer URL")
    options = parser.parse_args(argv)
    anyio.run(serve, options.port, options.issuer)


if __name__ == "__main__":
    main()
