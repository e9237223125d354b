"""Tracing: one trace runs host -> router -> upstream, continued from the `traceparent` of the
host's `_meta`, through the router's own spans, into the upstream call's `_meta`.

In-process tests record spans with the SDK's in-memory exporter through tracers patched in
for the test (the process-wide tracer provider is never set, so no other test sees spans);
`mcp-router serve` as a child process shows the variables that turn tracing on, and that
the context passes through even with tracing off.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from router.core import tracing
from tests.server.http.test_metrics import traced_upstream
from tests.support.http_serving import (
    Front,
    config,
    http_front,
    open_session,
    sse_data,
    until_indexed,
)
from tests.support.serving import raw_router, write_config

pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

pytestmark = pytest.mark.processes

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
HOST_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{HOST_SPAN}-01"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The router's and the MCP SDK's tracers, recording into memory for this test only."""
    import mcp.shared._otel as sdk_otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("mcp-router"))
    monkeypatch.setattr(sdk_otel, "_tracer", provider.get_tracer("mcp-python-sdk"))
    yield exporter
    provider.shutdown()


@pytest.fixture
async def front() -> AsyncIterator[Front]:
    async with http_front(config({"traced": traced_upstream()})) as running:
        with anyio.fail_after(20):
            await until_indexed(running.state)
        yield running


async def call(front: Front, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`tools/call` on a raw streamable-HTTP session, with the host's trace in `_meta`."""
    params = {"name": name, "arguments": arguments, "_meta": {"traceparent": TRACEPARENT}}
    async with httpx2.AsyncClient(timeout=20) as http:
        session = await open_session(http, front.mcp)
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        answer = await http.post(front.mcp, json=message, headers=session)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = sse_data(answer.text)[-1]["result"]
    return result


def named(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = [s for s in exporter.get_finished_spans() if s.name == name]
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def ids(span: ReadableSpan) -> tuple[str, str, str | None]:
    """Trace id, span id and parent span id, in hex."""
    context = span.get_span_context()
    assert context is not None
    parent = f"{span.parent.span_id:016x}" if span.parent is not None else None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}", parent


async def test_a_forwarded_call_continues_the_hosts_trace_into_the_upstreams_meta(
    front: Front, spans: InMemorySpanExporter
) -> None:
    result = await call(front, "call_tool", {"name": "traced__meta", "arguments": {}})
    seen_upstream = json.loads(result["content"][0]["text"])

    server = ids(named(spans, "tools/call call_tool"))  # the SDK's span for the host's request
    forward = ids(named(spans, "mcp-router forward traced__meta"))
    client = ids(named(spans, "MCP send tools/call meta"))  # the SDK's span for the upstream's
    assert server == (TRACE_ID, server[1], HOST_SPAN)
    assert forward == (TRACE_ID, forward[1], server[1])
    assert client == (TRACE_ID, client[1], forward[1])
    assert seen_upstream["traceparent"] == f"00-{TRACE_ID}-{client[1]}-01"
    attributes = named(spans, "mcp-router forward traced__meta").attributes or {}
    assert attributes["mcp_router.upstream"] == "traced"
    assert attributes["gen_ai.tool.name"] == "meta"


async def test_a_search_is_a_span_in_the_hosts_trace(
    front: Front, spans: InMemorySpanExporter
) -> None:
    await call(front, "search_tools", {"query": "refund a payment", "k": 2})
    server = ids(named(spans, "tools/call search_tools"))
    search = named(spans, "mcp-router search")
    assert ids(search) == (TRACE_ID, ids(search)[1], server[1])
    assert (search.attributes or {})["mcp_router.k"] == 2


async def test_a_failed_call_marks_its_span_failed(
    front: Front, spans: InMemorySpanExporter
) -> None:
    result = await call(front, "traced__fail", {})
    assert result["isError"] is True
    assert not named(spans, "mcp-router forward traced__fail").status.is_ok


async def test_with_tracing_off_the_hosts_trace_context_still_reaches_the_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(tracing.EXPORTERS_VARIABLE, raising=False)
    path = write_config(tmp_path, {"traced": traced_upstream()})
    async with raw_router(path) as router:
        with anyio.fail_after(20):
            await router.initialize()
            params = {
                "name": "traced__meta",
                "arguments": {},
                "_meta": {"traceparent": TRACEPARENT},
            }
            result = await router.result("tools/call", params)
    assert json.loads(result["content"][0]["text"])["traceparent"] == TRACEPARENT


async def test_the_console_exporter_writes_spans_to_stderr_and_stdout_keeps_only_json_rpc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracing.EXPORTERS_VARIABLE, "console")
    monkeypatch.delenv(tracing.DISABLED_VARIABLE, raising=False)
    path = write_config(tmp_path, {"traced": traced_upstream()})
    async with raw_router(path) as router:
        with anyio.fail_after(20):
            await router.initialize()
            params = {
                "name": "search_tools",
                "arguments": {"query": "refund"},
                "_meta": {"traceparent": TRACEPARENT},
            }
            await router.result("tools/call", params)
            lines = await router.finish()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    log = (tmp_path / "router.log").read_text()
    assert "tracing on: spans go to console" in log
    assert '"name": "mcp-router search"' in log
    assert f'"trace_id": "0x{TRACE_ID}"' in log


def test_tracing_stays_off_without_an_exporter_when_disabled_or_without_the_extra(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert not tracing.configure_from_env({})
    assert not tracing.configure_from_env({"OTEL_TRACES_EXPORTER": "none"})
    disabled = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}
    assert not tracing.configure_from_env(disabled)
    monkeypatch.setitem(__import__("sys").modules, "opentelemetry.sdk.trace", None)
    with caplog.at_level(logging.WARNING, logger="router.core.tracing"):
        assert not tracing.configure_from_env({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing.EXTRA_HINT in caplog.text
