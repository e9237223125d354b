"""The tools the conformance suite's tasks scenarios (0.2.0 line, `tasks-*`: the tasks extension,
SEP-2663) call, on the conformance fixture's `MCPServer` (`tests/conformance/fixture_server.py`).

Written the way a third party would with the SDK, which has no tasks: each tool is an ordinary
tool that takes as long as its work does (`slow_compute` sleeps, `failing_job` fails after a
second), asks the user what it needs to know (`confirm_delete`, `multi_input`: a resolver's
elicitation, a mid-call request up to 2025-11-25 and an `InputRequiredResult` on 2026-07-28;
`test_tool_with_task`: an `InputRequiredResult`, then long work), or fails (`failing_job`: a
tool error, `isError`; `protocol_error_job`: a JSON-RPC error). Which calls become tasks, and
which need one, is the router's to decide, by its config (`benchmarks/conformance_servers.py`).
"""

from __future__ import annotations

from typing import Annotated

import anyio
import mcp_types as types
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

WORK_SECONDS = 3.0
"""How long `test_tool_with_task`'s work takes once it has the name (longer than the router's
`router.tasks.after_ms`, so the router makes it a task)."""


class Confirm(BaseModel):
    confirm: bool = Field(description="Go ahead?")


class Name(BaseModel):
    name: str = Field(description="A name")


def _confirm_deleting(filename: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {filename}?", Confirm)


def _first_name() -> Elicit[Name]:
    return Elicit("First name?", Name)


def _second_name() -> Elicit[Name]:
    return Elicit("Second name?", Name)


def _said(answer: ElicitationResult[Name]) -> str:
    return answer.data.name if isinstance(answer, AcceptedElicitation) else f"({answer.action})"


def register(app: MCPServer) -> None:
    """Add the tasks scenarios' tools to `app`."""

    @app.tool()
    def greet(name: str) -> str:
        """Greets someone by name"""
        return f"Hello, {name}!"

    @app.tool()
    async def slow_compute(seconds: float, label: str = "") -> str:
        """Works for `seconds` seconds, then says it is done"""
        await anyio.sleep(seconds)
        return f"Computed {label or 'it'} in {seconds} s"

    @app.tool()
    async def failing_job() -> str:
        """Works for a second, then fails"""
        await anyio.sleep(1)
        raise ToolError("the job failed")

    @app.tool()
    async def protocol_error_job() -> str:
        """Breaks off with an internal (JSON-RPC) error"""
        raise MCPError(types.INTERNAL_ERROR, "the job broke")

    @app.tool()
    async def confirm_delete(
        filename: str,
        answer: Annotated[ElicitationResult[Confirm], Resolve(_confirm_deleting)],
    ) -> str:
        """Deletes a file once the user confirms"""
        if isinstance(answer, AcceptedElicitation) and answer.data.confirm:
            return f"Deleted {filename}"
        return f"Kept {filename}"

    @app.tool()
    async def multi_input(
        first: Annotated[ElicitationResult[Name], Resolve(_first_name)],
        second: Annotated[ElicitationResult[Name], Resolve(_second_name)],
    ) -> str:
        """Asks two names at once"""
        return f"Got {_said(first)} and {_said(second)}"

    @app.tool()
    async def test_tool_with_task(ctx: Context) -> str | types.InputRequiredResult:
        """Asks the user's name, then works a while on a greeting"""
        answer = (ctx.input_responses or {}).get("user_name")
        if not isinstance(answer, types.ElicitResult):
            schema = {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="What is your name?", requested_schema=schema
                )
            )
            return types.InputRequiredResult(input_requests={"user_name": ask})
        await anyio.sleep(WORK_SECONDS)
        name = (answer.content or {}).get("name") if answer.action == "accept" else None
        return f"Hello, {name or 'stranger'}!"
