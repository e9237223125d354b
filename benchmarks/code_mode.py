"""Code mode's token bill and overhead: multi-step tasks done three ways through a real router.

    python -m benchmarks.code_mode               # writes benchmarks/results/code-mode.json
    python -m benchmarks.code_mode --table-only  # re-render the READMEs from the JSON

The upstreams are the example servers of `examples/servers.json` (time, git, fetch,
everything, memory, filesystem) plus `tests/upstreams/shop.py` (a shop's orders: large
structured results). Each way is a real `mcp-router serve` child over stdio (BM25 only), and
a scripted "ideal agent" (no model: the count measures the protocol) does each task:

- `search_call`: the default mode: `search_tools` for what it needs, then `call_tool` step by
  step, reading every result;
- `all_listed`: pass-through (`"mode": "all"`): every tool listed, called directly;
- `code`: code mode: `search_tools` (Python signatures), then one `execute` program.

Tokens are cl100k (`router.accounting.TokenCounter`): the tool list as the router sends it
(its MCP JSON), each call as the model writes it (`{"name", "arguments"}` JSON), and each
result's text blocks as a host places them in the context (an SDK server writes structured
content as a text block too; the agent's final answer is the same every way and left out).
`context` counts each token once; `input_no_cache` is what the model reads over all its
turns (one turn per call, plus the answer), each re-reading the listing and every earlier
call and result: the bill without prompt caching. The last task is the counter-case, one
small call, where code mode costs more. Overhead: `execute` round trips against direct calls
(p50 over `SAMPLES`), and the sandbox alone in process (warm pool); limits: how long a
`while True` and a memory bomb run past `max_seconds: 1`, and a direct call's latency while
the loop runs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from benchmarks.example_servers import ROOT, example_config
from benchmarks.provenance import head_commit
from benchmarks.suite.readme import replace_between
from router.accounting.tokens import ENCODING, TokenCounter
from router.code_mode.sandbox import Sandbox
from router.config.code import CodeSettings

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "code-mode.json"
README = ROOT / "docs" / "code-mode.md"  # the code-mode page's table
BENCH_README = HERE / "README.md"
START, END = "<!-- code-mode:start -->", "<!-- code-mode:end -->"
SHOP = ROOT / "tests" / "upstreams" / "shop.py"
SAMPLES = 30
WAYS = ("search_call", "all_listed", "code")
COUNTER = TokenCounter()
JsonObject = dict[str, Any]
Agent = Callable[["Transcript"], Awaitable[None]]


class Transcript:
    """What passes through the model's context: the listing, then each call and result."""

    def __init__(self, client: Client, listing: list[types.Tool]) -> None:
        self.client = client
        dumped = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listing]
        self.definitions = COUNTER.count_text(json.dumps({"tools": dumped}))
        self.steps: list[tuple[int, int]] = []  # (written, read) per call

    async def call(self, name: str, arguments: JsonObject) -> types.CallToolResult:
        result = await self.client.call_tool(name, arguments)
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        written = COUNTER.count_text(json.dumps({"name": name, "arguments": arguments}))
        self.steps.append((written, COUNTER.count_text(text)))
        if result.is_error:
            raise SystemExit(f"{name} failed in the transcript: {text[:300]}")
        return result

    async def tool(self, way: str, name: str, arguments: JsonObject) -> Any:
        """Call a tool as `way` does: through `call_tool` in search mode, else by its name."""
        if way == "search_call":
            result = await self.call("call_tool", {"name": name, "arguments": arguments})
        else:
            result = await self.call(name, arguments)
        return result.structured_content

    def figures(self) -> JsonObject:
        written = sum(w for w, _ in self.steps)
        read = sum(r for _, r in self.steps)
        context, billed = self.definitions, 0
        for step_written, step_read in self.steps:
            billed += context  # this turn reads everything so far, then writes the call
            context += step_written + step_read
        billed += context  # the turn that answers
        return {
            "calls": len(self.steps),
            "definitions": self.definitions,
            "written": written,
            "read": read,
            "context": context,
            "input_no_cache": billed,
        }


async def search(t: Transcript, query: str, needed: list[str]) -> None:
    result = await t.call("search_tools", {"query": query, "k": 5})
    found = [tool["name"] for tool in (result.structured_content or {}).get("tools", [])]
    missing = [name for name in needed if name not in found]
    if missing:
        raise SystemExit(f"search_tools({query!r}) missed {missing}: {found}")


REFUND_PROGRAM = """\
import asyncio
orders = (await call_tool("shop__list_orders", {"status": "overdue"}))["orders"]
big = [o for o in orders if o["total"] > 700]
async def settle(order):
    customer = await call_tool("shop__get_customer", {"customer_id": order["customer_id"]})
    amount = round(order["total"] * 0.1, 2)
    await call_tool("shop__refund_order", {"order_id": order["id"], "amount": amount})
    await call_tool("shop__send_email", {"to": customer["email"], "subject": "Your refund",
        "body": f"We refunded {amount} on order {order['id']}."})
    return order["id"]
await asyncio.gather(*[settle(o) for o in big])
"""
REPORT_PROGRAM = """\
revenue = {}
for order in (await call_tool("shop__list_orders", {"status": "shipped"}))["orders"]:
    for line in order["lines"]:
        product = line["product"]
        revenue[product] = revenue.get(product, 0) + line["quantity"] * line["price"]
{product: round(total, 2) for product, total in sorted(revenue.items())}
"""
AUTHORS_PROGRAM = """\
import re
log = await call_tool("git__git_log", {"repo_path": REPO, "max_count": 30})
authors = re.findall(r"Author: (.+)", log)
counts = {a: authors.count(a) for a in set(authors)}
{"commits": len(authors), "by_author": counts, "latest": re.findall(r"Message: (.+)", log)[0][:80]}
"""


async def refunds(t: Transcript, way: str) -> None:
    """Refund 10% on every overdue order over 700 and email each customer."""
    if way == "code":
        await search(t, "list the shop's orders", ["shop__list_orders"])
        await search(t, "refund an order and email the customer", ["shop__refund_order"])
        await t.call("execute", {"code": REFUND_PROGRAM})
        return
    if way == "search_call":
        await search(t, "list the shop's orders", ["shop__list_orders"])
    orders = (await t.tool(way, "shop__list_orders", {"status": "overdue"}))["orders"]
    if way == "search_call":
        await search(t, "refund an order and email the customer", ["shop__refund_order"])
    for order in [o for o in orders if o["total"] > 700]:
        customer = await t.tool(way, "shop__get_customer", {"customer_id": order["customer_id"]})
        amount = round(order["total"] * 0.1, 2)
        await t.tool(way, "shop__refund_order", {"order_id": order["id"], "amount": amount})
        body = f"We refunded {amount} on order {order['id']}."
        email = {"to": customer["email"], "subject": "Your refund", "body": body}
        await t.tool(way, "shop__send_email", email)


async def report(t: Transcript, way: str) -> None:
    """Revenue per product over the shipped orders."""
    if way != "all_listed":
        await search(t, "list the shop's orders", ["shop__list_orders"])
    if way == "code":
        await t.call("execute", {"code": REPORT_PROGRAM})
    else:
        await t.tool(way, "shop__list_orders", {"status": "shipped"})


async def authors(t: Transcript, way: str) -> None:
    """Commits per author over the last 30 commits of this repository, and the latest one."""
    if way != "all_listed":
        await search(t, "show the git log of a repository", ["git__git_log"])
    if way == "code":
        await t.call("execute", {"code": f"REPO = {str(ROOT)!r}\n" + AUTHORS_PROGRAM})
    else:
        await t.call(*_named(way, "git__git_log", {"repo_path": str(ROOT), "max_count": 30}))


async def tokyo(t: Transcript, way: str) -> None:
    """The counter-case: one small call (what time is it in Tokyo)."""
    if way != "all_listed":
        await search(t, "what time is it in Tokyo", ["time__get_current_time"])
    arguments = {"timezone": "Asia/Tokyo"}
    if way == "code":
        program = f"await call_tool('time__get_current_time', {arguments!r})"
        await t.call("execute", {"code": program})
    else:
        await t.call(*_named(way, "time__get_current_time", arguments))


def _named(way: str, name: str, arguments: JsonObject) -> tuple[str, JsonObject]:
    if way == "search_call":
        return "call_tool", {"name": name, "arguments": arguments}
    return name, arguments


TASKS: dict[str, tuple[str, Callable[[Transcript, str], Awaitable[None]]]] = {
    "shop-refunds": ("refund 10% on each overdue order over 700, email each customer", refunds),
    "shop-revenue": ("revenue per product over the shipped orders", report),
    "git-authors": ("commits per author in the last 30 commits, and the latest", authors),
    "time-tokyo": ("counter-case: what time is it in Tokyo (one small call)", tokyo),
}


def _parameters(config: Path) -> StdioServerParameters:
    command = [sys.executable, "-m", "router", "serve", "--config", str(config), "--bm25-only"]
    return StdioServerParameters(command=command[0], args=command[1:], cwd=config.parent)


def _write(scratch: Path, mode: str, **router: Any) -> Path:
    data = example_config(scratch)
    data["mcpServers"]["shop"] = {"command": sys.executable, "args": [str(SHOP)]}
    data["router"].update({"mode": mode, "pin": [], **router})
    path = scratch / f"{mode}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


async def _ready(client: Client) -> None:
    """Until every upstream is indexed (a search says none is still starting)."""
    with anyio.fail_after(120):
        while True:
            result = await client.call_tool("search_tools", {"query": "status"})
            text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
            if "still starting" not in text:
                return
            await anyio.sleep(0.2)


async def tokens(scratch: Path) -> JsonObject:
    modes = {"search_call": "search", "all_listed": "all", "code": "code"}
    figures: dict[str, JsonObject] = {task: {} for task in TASKS}
    for way, mode in modes.items():
        async with Client(_parameters(_write(scratch, mode)), mode="legacy") as client:
            if mode == "all":
                await client.call_tool("time__get_current_time", {"timezone": "Etc/UTC"})
            else:
                await _ready(client)
            listing = (await client.list_tools()).tools
            for task, (_, agent) in TASKS.items():
                transcript = Transcript(client, listing)
                await agent(transcript, way)
                figures[task][way] = transcript.figures()
    return figures


async def overhead(scratch: Path) -> JsonObject:
    """`execute` against direct calls, through a router; the sandbox alone in process."""
    path = _write(scratch, "code", code={"max_seconds": 1, "max_memory_mb": 32})
    timings: dict[str, list[float]] = {"direct": [], "execute_trivial": [], "execute_one_call": []}
    calls = {
        "direct": ("shop__events", {}),
        "execute_trivial": ("execute", {"code": "1"}),
        "execute_one_call": ("execute", {"code": "await call_tool('shop__events', {})"}),
    }
    async with Client(_parameters(path), mode="legacy") as client:
        await _ready(client)
        for _ in range(SAMPLES):
            for label, (name, arguments) in calls.items():
                started = time.perf_counter()
                await client.call_tool(name, arguments)
                timings[label].append((time.perf_counter() - started) * 1000)
        limits = {
            "loop": await _stopped(client, "while True:\n    pass"),
            "memory_bomb": await _stopped(client, "x = 'ab'\nwhile True:\n    x = x + x"),
        }
    p50 = {label: round(statistics.median(values), 2) for label, values in timings.items()}
    p50["execute_one_call_minus_direct"] = round(p50["execute_one_call"] - p50["direct"], 2)
    return {"router_p50_ms": p50, "sandbox_p50_ms": await _sandbox_alone(), "limits": limits}


async def _stopped(client: Client, code: str) -> JsonObject:
    """How long `code` ran before its limit stopped it, and a direct call meanwhile."""
    answered: list[float] = []
    started = time.perf_counter()

    async def direct() -> None:
        await anyio.sleep(0.3)
        began = time.perf_counter()
        await client.call_tool("shop__events", {})
        answered.append((time.perf_counter() - began) * 1000)

    async with anyio.create_task_group() as group:
        group.start_soon(direct)
        result = await client.call_tool("execute", {"code": code})
    text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
    named = re.search(r"\((router\.code\.\w+)\)", text)
    return {
        "stopped_after_s": round(time.perf_counter() - started, 2),
        "limit": named.group(1) if named else None,
        "direct_call_meanwhile_ms": round(answered[0], 1),
    }


class _Instant:
    async def call_tool(self, name: str, arguments: JsonObject) -> Any:
        return {"ok": True}

    async def search_tools(self, query: str, k: int | None) -> list[JsonObject]:
        return []


async def _sandbox_alone() -> JsonObject:
    sandbox = Sandbox(CodeSettings())
    found: JsonObject = {}
    async with anyio.create_task_group() as group:
        await group.start(sandbox.run_pool)
        for label, code in (("trivial", "1"), ("one_call", "await call_tool('x', {})")):
            await sandbox.run(code, _Instant())  # warm
            runs = []
            for _ in range(SAMPLES):
                started = time.perf_counter()
                await sandbox.run(code, _Instant())
                runs.append((time.perf_counter() - started) * 1000)
            found[label] = round(statistics.median(runs), 2)
        group.cancel_scope.cancel()
    return found


def markdown(result: JsonObject) -> str:
    """The table of benchmarks/README.md and README.md, from the result alone."""
    lines = [
        "| task | search + call | all listed | code mode | code / search + call |",
        "|---|---:|---:|---:|---:|",
    ]
    for task, ways in result["tasks"].items():
        cells = [f"{ways[way]['context']:,} ({_calls(ways[way]['calls'])})" for way in WAYS]
        ratio = ways["code"]["context"] / ways["search_call"]["context"]
        lines.append(f"| {task} | {' | '.join(cells)} | {ratio:.2f}× |")
    over, limits = result["overhead"]["router_p50_ms"], result["overhead"]["limits"]
    alone = result["overhead"]["sandbox_p50_ms"]
    lines += [
        "",
        f"Tokens through the model's context (cl100k, each token once: listing, calls, "
        f"results; commit {result['commit']}). Without prompt caching, over every turn: "
        + ", ".join(
            f"{task} {ways['code']['input_no_cache'] / ways['search_call']['input_no_cache']:.2f}×"
            for task, ways in result["tasks"].items()
        )
        + f". Overhead, p50 over {result['samples']}: `execute` of a program with one call "
        f"{over['execute_one_call']} ms against {over['direct']} ms for the direct call "
        f"(+{over['execute_one_call_minus_direct']} ms); the warm sandbox alone "
        f"{alone['trivial']} ms, {alone['one_call']} ms with one call. A `while True` under "
        f"`max_seconds: 1` stopped after {limits['loop']['stopped_after_s']} s "
        f"(`{limits['loop']['limit']}`), a memory bomb after "
        f"{limits['memory_bomb']['stopped_after_s']} s (`{limits['memory_bomb']['limit']}`); "
        f"a direct call during the loop took {limits['loop']['direct_call_meanwhile_ms']} ms.",
    ]
    return "\n".join(lines)


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def write_readmes(result: JsonObject) -> None:
    for path in (README, BENCH_README):
        text = path.read_text(encoding="utf-8")
        path.write_text(replace_between(text, START, END, markdown(result)), encoding="utf-8")


async def measure() -> JsonObject:
    with tempfile.TemporaryDirectory() as scratch:
        tasks = await tokens(Path(scratch))
        over = await overhead(Path(scratch))
    return {
        "benchmark": "code-mode",
        "commit": head_commit(),
        "date": datetime.now(UTC).date().isoformat(),
        "encoding": ENCODING,
        "samples": SAMPLES,
        "descriptions": {task: text for task, (text, _) in TASKS.items()},
        "tasks": tasks,
        "overhead": over,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table-only", action="store_true", help="re-render from the JSON")
    args = parser.parse_args(argv)
    if args.table_only:
        result = json.loads(OUT.read_text(encoding="utf-8"))
    else:
        result = anyio.run(measure)
        OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    write_readmes(result)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
