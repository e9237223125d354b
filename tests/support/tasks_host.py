"""A 2026-07-28 host of the tasks extension, as raw JSON-RPC over the front's HTTP (the SDK's
client has no tasks): each request carries its own envelope, the routing headers
(`Mcp-Method`, and `Mcp-Name` for named requests) and the caller's bearer token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types

from tests.support.http_serving import MCP_ACCEPT
from tests.support.identity_provider import bearer

EXTENSION = "io.modelcontextprotocol/tasks"
VERSION = "2026-07-28"
TERMINAL = ("completed", "failed", "cancelled")


class Refused(Exception):
    def __init__(self, status: int, error: dict[str, Any]) -> None:
        super().__init__(f"{status}: {error}")
        self.status, self.code = status, error["code"]
        self.message: str = error.get("message", "")
        self.data = error.get("data")


@dataclass
class Host:
    http: httpx2.AsyncClient
    url: str
    token: str | None = None
    declares: bool = True
    capabilities: dict[str, Any] = field(default_factory=dict)
    _ids: int = 0

    async def request(
        self, method: str, params: dict[str, Any], *, name: str | None = None
    ) -> dict[str, Any]:
        """The result of `method`; a JSON-RPC error raises `Refused` (with the HTTP status)."""
        body, headers = self._envelope(method, params, name)
        answer = await self.http.post(self.url, json=body, headers=headers)
        message = _message(answer)
        if "error" in message:
            raise Refused(answer.status_code, message["error"])
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = message["result"]
        return result

    @asynccontextmanager
    async def listen(self, notifications: dict[str, Any]) -> AsyncIterator[Listening]:
        """A `subscriptions/listen` stream asking for `notifications`, open while in use."""
        body, headers = self._envelope("subscriptions/listen", {"notifications": notifications})
        async with self.http.stream("POST", self.url, json=body, headers=headers) as answer:
            assert answer.status_code == 200
            yield Listening(body["id"], answer.aiter_lines())

    def _envelope(
        self, method: str, params: dict[str, Any], name: str | None = None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        capabilities = dict(self.capabilities)
        if self.declares:
            capabilities["extensions"] = {EXTENSION: {}}
        self._ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self._ids,
            "method": method,
            "params": {
                **params,
                "_meta": {
                    types.PROTOCOL_VERSION_META_KEY: VERSION,
                    types.CLIENT_CAPABILITIES_META_KEY: capabilities,
                },
            },
        }
        headers = {**MCP_ACCEPT, "mcp-protocol-version": VERSION, "mcp-method": method}
        named = name if name is not None else params.get("taskId", params.get("name"))
        if named is not None:
            headers["mcp-name"] = named
        if self.token is not None:
            headers.update(bearer(self.token))
        return body, headers

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.request("tasks/get", {"taskId": task_id})

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """`tasks/get` until the task is in one of `statuses` (polled as a host does at its
        `pollIntervalMs`, here faster); bound it."""
        while True:
            task = await self.get(task_id)
            if task["status"] in statuses:
                return task
            assert task["status"] not in TERMINAL, task
            await anyio.sleep(0.05)


@dataclass
class Listening:
    """An open listen stream: its frames, one at a time."""

    id: int
    lines: AsyncIterator[str]

    async def next(self) -> dict[str, Any]:
        """The stream's next JSON-RPC message (bound the wait)."""
        async for line in self.lines:
            if line.startswith("data:") and line[5:].strip():
                message: dict[str, Any] = json.loads(line[5:])
                return message
        raise AssertionError("the listen stream ended")


def _message(answer: httpx2.Response) -> dict[str, Any]:
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        messages = [json.loads(d) for d in data if d.strip()]
        found: dict[str, Any] = next(m for m in messages if "result" in m or "error" in m)
        return found
    message: dict[str, Any] = answer.json()
    return message


async def until_logged(log: Any, line: str) -> None:
    """Until the upstream's log (a `Path`) has `line`: it offers nothing to wait on. Bound it."""
    while True:
        if log.exists() and line in log.read_text("utf-8").splitlines():
            return
        await anyio.sleep(0.05)
