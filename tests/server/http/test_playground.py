"""The playground at `/`, in a real browser: Debian's `chromium`, headless, driven by
Playwright for Python through `executable_path` (no browser download).

Two fronts (in-process, BM25 only) serve tests/upstreams/toolbox.py, one open and one that
requires a token. The browser types a query and the test checks what the page shows against
what the REST API answers for the same query. Screenshots go to `test-output/` (git-ignored);
their paths are printed. Without chromium the browser tests skip, unless
MCP_ROUTER_REQUIRE_BROWSER=1 (CI sets it), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from fnmatch import fnmatch
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from playwright.async_api import Browser, Page, Request, async_playwright, expect
from starlette.responses import HTMLResponse

from router.accounting.formats import ToolFormat
from router.server.http.auth.security import SecurityPolicy
from router.server.http.playground import CONTENT_SECURITY_POLICY, PUBLIC_PATHS
from tests.conftest import ROOT
from tests.support.http_serving import Front, config, http_front, until_ready
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

PLAYGROUND = ROOT / "router" / "server" / "http" / "playground"
OUTPUT = ROOT / "test-output"
TOKEN = "playground-token-4321"
QUERY = "weather forecast for Paris"
FIRST = "toolbox__get_forecast"
TOOLBOX_TOOLS = 4
WAIT_MS = 10_000


def _toolbox_front(policy: SecurityPolicy | None = None) -> Any:
    return http_front(config({"toolbox": script("toolbox")}), policy)


@pytest.fixture(scope="module")
async def front() -> AsyncIterator[Front]:
    async with _toolbox_front() as running:
        with anyio.fail_after(30):
            await until_ready(running.state)
        yield running


@pytest.fixture(scope="module")
async def guarded() -> AsyncIterator[Front]:
    """A front that requires TOKEN (as one bound beyond loopback does)."""
    async with _toolbox_front(SecurityPolicy(token=TOKEN)) as running:
        with anyio.fail_after(30):
            await until_ready(running.state)
        yield running


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        reason = "Debian's chromium is not installed (apt-get install -y chromium)"
        if os.environ.get("MCP_ROUTER_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason}, and MCP_ROUTER_REQUIRE_BROWSER=1")
        pytest.skip(reason)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            # a second site on this machine, for the cross-origin test
            args=["--host-resolver-rules=MAP elsewhere.example 127.0.0.1"],
        )
        try:
            yield launched
        finally:
            await launched.close()


async def open_page(browser: Browser) -> tuple[Page, list[str]]:
    """A fresh page (its own sessionStorage) and the errors its console and scripts report:
    a Content-Security-Policy violation would be one."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


async def screenshot(page: Page, name: str) -> None:
    OUTPUT.mkdir(exist_ok=True)
    path = OUTPUT / name
    await page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


async def routed(front: Front, **headers: str) -> dict[str, Any]:
    """What `/v1/route` answers for QUERY, in each format."""
    async with httpx2.AsyncClient(base_url=front.url, headers=headers) as http:
        with anyio.fail_after(10):
            answers = {
                f: await http.post("/v1/route", json={"query": QUERY, "format": f})
                for f in ToolFormat
            }
    assert all(a.status_code == 200 for a in answers.values()), answers
    return {f.value: a.json() for f, a in answers.items()}


def shown(number: int) -> str:
    return f"{number:,}"


async def test_a_query_shows_the_ranked_tools_the_token_savings_and_the_upstream_health(
    browser: Browser, front: Front
) -> None:
    expected = await routed(front)
    page, errors = await open_page(browser)

    loaded = await page.goto(f"{front.url}/")
    await page.get_by_label("Task").fill(QUERY)
    await page.get_by_role("button", name="Route").click()

    rows = page.locator("#results tbody tr.tool")
    results = expected["mcp"]["results"]
    await expect(rows).to_have_count(len(results))
    assert await rows.locator("td.name code").all_text_contents() == [r["name"] for r in results]
    first = rows.first
    await expect(first.locator("td.name code")).to_have_text(FIRST)
    await expect(first.locator("td.rank")).to_have_text("1")
    await expect(first.locator("td.server")).to_have_text("toolbox")
    for signal, key in (("score", "score"), ("bm25", "bm25_score")):
        text = await first.locator(f"td.{signal}").text_content()
        assert text is not None and float(text) == pytest.approx(results[0][key], abs=5e-5)
    assert results[0]["score"] > 0
    await expect(first.locator("td.tokens")).to_have_text(shown(results[0]["tokens"]))
    schema = first.locator("details.schema pre")
    await expect(schema).to_be_hidden()
    await first.locator("details.schema summary").click()
    await expect(schema).to_be_visible()
    shown_schema = json.loads(await schema.text_content() or "null")
    assert shown_schema == expected["mcp"]["tools"][0]["inputSchema"]
    assert {"city", "days"} <= set(shown_schema["properties"])

    for fmt, answer in expected.items():
        bill = answer["tokens"]
        row = page.locator(f"#tokens tbody tr[data-format='{fmt}']")
        await expect(row.locator("td.routed")).to_have_text(shown(bill["routed"]))
        await expect(row.locator("td.full")).to_have_text(shown(bill["full"]))
        await expect(row.locator("td.saved")).to_have_text(shown(bill["full"] - bill["routed"]))
        await expect(row.locator("td.percent")).to_have_text(f"{bill['saved_percent']:.1f}%")
        assert bill["full"] > bill["routed"] > 0

    upstream = page.locator("#health tbody tr[data-upstream='toolbox']")
    await expect(upstream.locator("td.state")).to_have_text("healthy")
    await expect(upstream.locator("td.tools")).to_have_text(str(TOOLBOX_TOOLS))
    await expect(upstream.locator("td.indexed")).to_have_text("yes")
    await expect(page.locator("#health-summary")).to_contain_text("1 of 1 upstreams healthy")

    await screenshot(page, "playground.png")

    # A hostile description is shown as the text it is; none of its markup ran.
    await page.get_by_label("Task").fill("search my notes")
    await page.get_by_role("button", name="Route").click()
    notes = rows.filter(has=page.locator("code", has_text="toolbox__search_notes"))
    description = notes.locator(".description")
    await expect(description).to_contain_text("Search the notes")
    hostile = await description.text_content()
    assert hostile is not None and "<img" in hostile and "<script>" in hostile
    assert await page.locator("main img, main script").count() == 0
    assert await page.title() == "mcp-router playground"

    assert loaded is not None and loaded.status == 200
    assert loaded.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert errors == []
    await page.context.close()


async def test_with_a_token_required_the_page_asks_for_it_and_then_works(
    browser: Browser, guarded: Front
) -> None:
    async with httpx2.AsyncClient(base_url=guarded.url) as http:
        with anyio.fail_after(10):
            files = [await http.get(path) for path in sorted(PUBLIC_PATHS)]
            refused = [
                await http.post("/v1/route", json={"query": QUERY}),
                await http.get("/v1/tools"),
                await http.get("/metrics"),
                await http.post("/", json={"query": QUERY}),
            ]
    assert [f.status_code for f in files] == [200] * len(PUBLIC_PATHS)
    assert [r.status_code for r in refused[:3]] == [401, 401, 401]
    assert refused[3].status_code == 401  # only GET and HEAD of the page are public
    expected = await routed(guarded, Authorization=f"Bearer {TOKEN}")
    page, errors = await open_page(browser)
    api_calls: list[Request] = []
    page.on("request", lambda r: api_calls.append(r) if "/v1/" in r.url else None)

    await page.goto(f"{guarded.url}/")
    message = page.locator("#message")
    await expect(message).to_contain_text("requires a bearer token (401)")
    await page.get_by_label("Task").fill(QUERY)
    await page.get_by_role("button", name="Route").click()
    await expect(message).to_contain_text("routing the query was refused")
    await expect(page.locator("#results-section")).to_be_hidden()
    await screenshot(page, "playground-token-required.png")

    await page.get_by_label("Bearer token").fill("a-wrong-token")
    await page.get_by_role("button", name="Use token").click()
    await expect(message).to_contain_text("did not accept the token (401)")

    await page.get_by_label("Bearer token").fill(TOKEN)
    await page.get_by_role("button", name="Use token").click()  # then asks again
    rows = page.locator("#results tbody tr.tool")
    await expect(rows.first.locator("td.name code")).to_have_text(FIRST)
    await expect(rows).to_have_count(len(expected["mcp"]["results"]))
    await expect(message).to_be_hidden()
    bill = expected["openai"]["tokens"]
    openai = page.locator("#tokens tbody tr[data-format='openai'] td.routed")
    await expect(openai).to_have_text(shown(bill["routed"]))
    upstream = page.locator("#health tbody tr[data-upstream='toolbox'] td.state")
    await expect(upstream).to_have_text("healthy")
    await screenshot(page, "playground-with-token.png")

    stored = await page.evaluate("sessionStorage.getItem('mcp-router.token')")
    assert stored == TOKEN
    assert not any(TOKEN in r.url for r in api_calls)
    sent = [(await r.all_headers()).get("authorization") for r in api_calls]
    assert sent[0] is None  # before any token was typed
    assert sent[-1] == f"Bearer {TOKEN}"
    # The refusals the page met are in the console as failed loads, and nothing else is.
    assert all(re.search(r"status of 401", e) for e in errors), errors
    await page.context.close()


@asynccontextmanager
async def elsewhere() -> AsyncIterator[int]:
    """Another site on this machine: a page at http://elsewhere.example:PORT/ (the browser
    resolves the name to 127.0.0.1), so it is a local page of another origin."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    page = HTMLResponse("<!doctype html><title>elsewhere</title>")
    server = uvicorn.Server(uvicorn.Config(page, log_config=None, access_log=False, ws="none"))
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            try:
                yield sock.getsockname()[1]
            finally:
                server.should_exit = True
    finally:
        sock.close()


async def test_a_page_of_another_origin_cannot_use_the_api(browser: Browser, front: Front) -> None:
    page, _ = await open_page(browser)
    url = f"{front.url}/v1/route"
    async with elsewhere() as port:
        await page.goto(f"http://elsewhere.example:{port}/")
        # A simple request (no preflight) reaches the front, which refuses it.
        async with page.expect_response(lambda r: r.url == url) as seen:
            await page.evaluate(
                """url => fetch(url, {method: "POST", mode: "no-cors",
                    headers: {"Content-Type": "text/plain"}, body: '{"query": "weather"}'})""",
                url,
            )
        answer = await seen.value
        # A JSON request needs a preflight, which is refused: the request is never sent.
        outcome = await page.evaluate(
            """url => fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                body: '{"query": "weather"}'}).then(r => `answered ${r.status}`, e => e.name)""",
            url,
        )
        # The name resolves to the router too (DNS rebinding): the page is refused there.
        rebound = await page.goto(f"http://elsewhere.example:{front.url.rsplit(':', 1)[1]}/")
    async with httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(10):
            other = await http.post(
                "/v1/route", json={"query": QUERY}, headers={"Origin": "http://elsewhere.example"}
            )
            itself = await http.post(
                "/v1/route", json={"query": QUERY}, headers={"Origin": front.url}
            )

    assert answer.status == 403
    assert outcome == "TypeError"
    assert rebound is not None and rebound.status == 421
    assert other.status_code == 403 and "allowed_origins" in other.json()["detail"]
    assert itself.status_code == 200
    await page.context.close()


def test_the_same_origin_passes_the_origin_check_behind_any_allowed_host() -> None:
    policy = SecurityPolicy(allowed_hosts=("router.internal:*",), token=TOKEN)
    host = "router.internal:8765"
    assert policy.origin_allowed("http://router.internal:8765", host)
    assert policy.origin_allowed("https://Router.Internal:8765", host)  # behind a TLS proxy
    assert not policy.origin_allowed("http://router.internal:9999", host)
    assert not policy.origin_allowed("http://evil.example", host)
    assert not policy.origin_allowed("null", host)
    assert not policy.origin_allowed("http://router.internal:8765", None)


def test_the_page_runs_no_inline_code_and_loads_nothing_from_elsewhere() -> None:
    page = (PLAYGROUND / "index.html").read_text()
    script = (PLAYGROUND / "playground.js").read_text()
    assert re.findall(r"<script[^>]*>", page) == ['<script src="playground/playground.js" defer>']
    assert not re.search(r"\s(style|on[a-z]+)\s*=", page)
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    # Data goes in as text: no HTML parsing of anything.
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY


def test_the_playground_files_ship_in_the_package() -> None:
    """The page's files are package data (tests/project/test_packaging.py checks that a built wheel
    holds every package and data file)."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = settings["package-data"]["router.server.http.playground"]
    files = [p.name for p in PLAYGROUND.iterdir() if p.suffix != ".py" and p.is_file()]
    assert sorted(files) == ["favicon.svg", "index.html", "playground.css", "playground.js"]
    assert all(any(fnmatch(name, pattern) for pattern in patterns) for name in files)
