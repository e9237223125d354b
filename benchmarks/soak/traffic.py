"""The soak's clients: paced loops of MCP and REST requests against one router, in four
roles that take turns over the client numbers.

- `session`: one streamable-HTTP session (handshake revision 2025-11-25, `mode="legacy"`)
  held through the phase: `search_tools`, then the task's tool by its qualified name, then
  another task through `call_tool`; `tools/list` every fifth round;
- `stateless`: the same over the stateless 2026-07-28 revision (the SDK's `mode="auto"`);
- `rest`: `POST /v1/route` (k = 5, the three tool formats in turn) on one keep-alive
  connection;
- `churn`: a new client each round (a new connection and session), streamable HTTP with a
  session, stateless, then legacy SSE in turn: open, search, call, close.

A request fails on an exception (transport, JSON-RPC error, timeout) or an answer that is not
the expected one; a session client that saw a failure opens a new session.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.soak.tasks import Draw, Task, answered, draw

ROLES = ("session", "stateless", "rest", "churn")
CHURN_MODES = ("legacy", "auto", "sse")
FORMATS = ("mcp", "openai", "anthropic")
REQUEST_TIMEOUT = 60.0
"""Seconds one request may take before it counts as failed."""
MAX_ERRORS = 50
LIST_EVERY = 5


@dataclass
class Tally:
    """Requests by kind, failures by kind, the first failures' reasons, sessions opened."""

    requests: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    sessions: Counter[str] = field(default_factory=Counter)
    search_hits: int = 0
    """Searches whose top k held the task's tool (a figure, not a check)."""

    def fail(self, kind: str, why: str) -> None:
        self.failures[kind] += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"{kind}: {why}")


@dataclass
class Pace:
    """One request per `period` seconds at most (0: no pause), until `stop_at`
    (`time.monotonic()`)."""

    period: float
    stop_at: float
    next_at: float = 0.0

    async def tick(self) -> bool:
        """Wait for the next slot; False once the phase is over."""
        now = time.monotonic()
        if self.next_at > now:
            await anyio.sleep(self.next_at - now)  # the soak's own pacing
            now = time.monotonic()
        self.next_at = max(self.next_at + self.period, now)
        return now < self.stop_at


async def request(tally: Tally, kind: str, send: Callable[[], Awaitable[str | None]]) -> bool:
    """Send one request, bounded in time; count it, and its failure if any."""
    tally.requests[kind] += 1
    try:
        with anyio.fail_after(REQUEST_TIMEOUT):
            why = await send()
    except Exception as error:  # every failure counts; the soak goes on
        why = f"{type(error).__name__}: {str(error)[:200]}"
    if why is not None:
        tally.fail(kind, why)
    return why is None


@asynccontextmanager
async def mcp_client(url: str, mode: str) -> AsyncIterator[Client]:
    """An SDK client of the router: streamable HTTP (`legacy` or `auto`) or legacy SSE."""
    if mode == "sse":
        async with Client(sse_client(f"{url}/sse"), mode="legacy") as client:
            yield client
    else:
        transport = streamable_http_client(f"{url}/mcp")
        async with Client(transport, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT) as client:
            yield client


@dataclass
class Worker:
    """One client's loop; `tasks` is the upstream set's task list."""

    url: str
    tasks: tuple[Draw, ...]
    tally: Tally
    pace: Pace
    rng: random.Random

    async def search(self, client: Client, task: Task) -> bool:
        async def send() -> str | None:
            result = await client.call_tool("search_tools", {"query": task.query})
            tools = (result.structured_content or {}).get("tools")
            if result.is_error or not tools:
                return f"search_tools: {str(result.content)[:200]}"
            self.tally.search_hits += any(t.get("name") == task.tool for t in tools)
            return None

        return await request(self.tally, "search_tools", send)

    async def call(self, client: Client, task: Task, wrapped: bool) -> bool:
        async def send() -> str | None:
            if wrapped:
                arguments = {"name": task.tool, "arguments": task.arguments}
                return answered(await client.call_tool("call_tool", arguments), task)
            return answered(await client.call_tool(task.tool, task.arguments), task)

        return await request(self.tally, "call_tool" if wrapped else "call_by_name", send)

    async def list_tools(self, client: Client) -> bool:
        async def send() -> str | None:
            listed = await client.list_tools()
            names = {tool.name for tool in listed.tools}
            return None if "search_tools" in names else f"tools/list without search_tools: {names}"

        return await request(self.tally, "tools_list", send)

    async def rounds(self, client: Client) -> None:
        """Search, call by name, call through `call_tool` (and list) until the phase ends or
        a request fails."""
        round_no = 0
        while True:
            task = draw(self.tasks, self.rng)
            if not (await self.pace.tick() and await self.search(client, task)):
                return
            if not (await self.pace.tick() and await self.call(client, task, wrapped=False)):
                return
            other = draw(self.tasks, self.rng)
            if not (await self.pace.tick() and await self.call(client, other, wrapped=True)):
                return
            round_no += 1
            if round_no % LIST_EVERY == 0 and not (
                await self.pace.tick() and await self.list_tools(client)
            ):
                return

    async def held_session(self, mode: str) -> None:
        """`session` and `stateless`: one client for the phase (a new one after a failure)."""
        while await self.pace.tick():
            await self.opened(mode, self.rounds)

    async def opened(self, mode: str, use: Callable[[Client], Awaitable[None]]) -> None:
        """Open a client in `mode` (an `open_<mode>` request, bounded in time), use it, close
        it; a failure to open or to close counts."""
        self.tally.requests[f"open_{mode}"] += 1
        self.tally.sessions[mode] += 1
        opening = anyio.CancelScope(deadline=anyio.current_time() + REQUEST_TIMEOUT)
        stage = "open"
        try:
            with opening:
                async with mcp_client(self.url, mode) as client:
                    opening.deadline = math.inf
                    stage = "use"
                    await use(client)
                    stage = "close"
        except Exception as error:  # counted; the worker goes on
            self.tally.fail(f"{stage}_{mode}", f"{type(error).__name__}: {str(error)[:200]}")
        if opening.cancelled_caught:
            self.tally.fail(f"open_{mode}", f"no session within {REQUEST_TIMEOUT:.0f} s")

    async def churn(self) -> None:
        """`churn`: a new client every round, the modes in turn."""
        turn = 0

        async def one_round(client: Client) -> None:
            task = draw(self.tasks, self.rng)
            if await self.search(client, task) and await self.pace.tick():
                await self.call(client, task, wrapped=turn % 2 == 1)

        while await self.pace.tick():
            await self.opened(CHURN_MODES[turn % len(CHURN_MODES)], one_round)
            turn += 1

    async def rest(self) -> None:
        """`rest`: `POST /v1/route` on one keep-alive connection."""
        turn = 0
        async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            while await self.pace.tick():
                task = draw(self.tasks, self.rng)
                body = {"query": task.query, "k": 5, "format": FORMATS[turn % len(FORMATS)]}
                turn += 1

                async def send(body: dict[str, Any] = body) -> str | None:
                    answer = await http.post(f"{self.url}/v1/route", json=body)
                    if answer.status_code != 200:
                        return f"HTTP {answer.status_code}: {answer.text[:200]}"
                    if len(answer.json()["tools"]) != 5:
                        return f"not 5 tools: {answer.text[:200]}"
                    return None

                await request(self.tally, "route", send)

    async def run(self, role: str) -> None:
        if role == "rest":
            await self.rest()
        elif role == "churn":
            await self.churn()
        else:
            await self.held_session("legacy" if role == "session" else "auto")


async def load(
    url: str,
    tasks: tuple[Draw, ...],
    clients: int,
    seconds: float,
    period: float,
    seed: int,
    roles: tuple[str, ...] = ROLES,
) -> Tally:
    """`clients` workers for `seconds`, `roles` in turn; every session closed on return."""
    tally = Tally()
    stop_at = time.monotonic() + seconds
    rng = random.Random(seed)
    with anyio.fail_after(seconds + 2 * REQUEST_TIMEOUT + 30):
        async with anyio.create_task_group() as group:
            for number in range(clients):
                start = time.monotonic() + rng.uniform(0, period)  # spread the clients out
                pace = Pace(period, stop_at, start)
                worker = Worker(url, tasks, tally, pace, random.Random(rng.random()))
                group.start_soon(worker.run, roles[number % len(roles)])
    return tally
