"""The surface pages (docs/stdio.md, docs/http.md, docs/rest.md) against a running router.

Every fenced `json` block must parse. docs/stdio.md's transcript (blocks tagged
`role=request` / `role=response`) is sent to a real `mcp-router serve` child over stdio, and
each answer must have the documented keys and tool names. In docs/http.md and docs/rest.md, a
`curl` block after `<!-- checked status=N -->` is sent with httpx2 to an in-process front
(tests/upstreams/guarded.py behind it, BM25 only): the status must be N and the live body
must have the keys of the `json` block that follows (`body=none`: no body to compare;
`body=text`: every `# TYPE` line of the block that follows must be in the live text). Values
that vary between runs (scores, counts, ids) are not compared, except tool names.
`front=token` sends the request to a front with a bearer token, as does any `$ROUTER_TOKEN`
in the command; `$SESSION` is the last `mcp-session-id` the front handed out. A string
`"…"` in a documented body stands for any value, and a list ending in `"…"` for a longer one.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import Front, config, http_front, sse_data, until_ready
from tests.support.serving import raw_router, write_config
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

DOCS = Path(__file__).resolve().parents[3] / "docs"
PAGES = ("stdio.md", "http.md", "rest.md")
DOCUMENTED_BASE = "http://127.0.0.1:8765"
TOKEN = "docs-token-2468"
ELLIPSIS = "…"
NAME_KEYS = ("name", "tool_name")

_FENCE = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_CHECKED = re.compile(r"<!-- checked ([^>]*)-->")


@dataclass(frozen=True)
class Block:
    language: str
    info: str
    text: str
    start: int


@dataclass(frozen=True)
class Example:
    """A checked curl example: the request, where to send it, and what it answers."""

    status: int
    body: str  # "json", "none" or "text"
    token: bool
    command: str
    documented: str | None


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    data: str | None


def blocks(page: str) -> list[Block]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return [
        Block(m.group(1), m.group(2).strip(), m.group(3), m.start()) for m in _FENCE.finditer(text)
    ]


def examples(page: str) -> list[Example]:
    """The checked curl examples of `page`, in order."""
    text = (DOCS / page).read_text(encoding="utf-8")
    fenced = blocks(page)
    found = []
    for marker in _CHECKED.finditer(text):
        options = dict(part.split("=", 1) for part in marker.group(1).split())
        after = [block for block in fenced if block.start > marker.end()]
        command = after[0]
        assert command.language == "sh" and command.text.lstrip().startswith("curl"), (
            f"{page}: a checked marker must come right before a curl block"
        )
        body = options.get("body", "json")
        documented = None
        if body != "none":
            expected = "json" if body == "json" else "text"
            assert after[1].language == expected, f"{page}: {command.text!r} needs {expected}"
            documented = after[1].text
        found.append(
            Example(
                status=int(options["status"]),
                body=body,
                token=options.get("front") == "token" or "$ROUTER_TOKEN" in command.text,
                command=command.text,
                documented=documented,
            )
        )
    return found


def parse_curl(command: str, session: str | None) -> Request:
    """The request a `curl` command line of the pages sends (the options they use)."""
    words = shlex.split(command.replace("\\\n", " "))
    assert words[0] == "curl", command
    method, url, data = None, None, None
    headers: dict[str, str] = {}
    iterator = iter(words[1:])
    for word in iterator:
        if word in ("-s", "-N", "--no-buffer"):
            continue
        if word == "-X":
            method = next(iterator)
        elif word == "-H":
            name, _, value = next(iterator).partition(":")
            value = value.strip().replace("$ROUTER_TOKEN", TOKEN)
            headers[name.strip().lower()] = value.replace("$SESSION", session or "")
        elif word in ("-d", "--data"):
            data = next(iterator)
        else:
            assert word.startswith(DOCUMENTED_BASE), f"unexpected curl word {word!r}"
            url = word
    assert url is not None, command
    return Request(
        method or ("POST" if data is not None else "GET"),
        url.removeprefix(DOCUMENTED_BASE),
        headers,
        data,
    )


def same_shape(documented: Any, live: Any, where: str = "$") -> Iterator[str]:
    """Where `live` differs from `documented` in its keys, its lengths or its tool names."""
    if documented == ELLIPSIS:
        return
    if isinstance(documented, dict):
        if not isinstance(live, dict):
            yield f"{where}: documented an object, got {live!r}"
            return
        if set(documented) != set(live):
            yield f"{where}: keys {sorted(documented)} documented, {sorted(live)} live"
        for key in documented.keys() & live.keys():
            if key in NAME_KEYS and documented[key] != live[key]:
                yield f"{where}.{key}: {documented[key]!r} documented, {live[key]!r} live"
            yield from same_shape(documented[key], live[key], f"{where}.{key}")
    elif isinstance(documented, list):
        if not isinstance(live, list):
            yield f"{where}: documented a list, got {live!r}"
            return
        trimmed = bool(documented) and documented[-1] == ELLIPSIS
        shown = documented[:-1] if trimmed else documented
        if len(live) < len(shown) or (not trimmed and len(live) != len(shown)):
            yield f"{where}: {len(documented)} items documented, {len(live)} live"
        for index, (doc_item, live_item) in enumerate(zip(shown, live, strict=False)):
            yield from same_shape(doc_item, live_item, f"{where}[{index}]")


def live_body(response: httpx2.Response) -> Any:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = sse_data(response.text)
        assert len(messages) == 1, response.text
        return messages[0]
    return response.json()


@pytest.mark.parametrize("page", PAGES)
def test_every_json_block_parses(page: str) -> None:
    for block in blocks(page):
        if block.language == "json":
            json.loads(block.text)


@pytest.fixture(scope="module")
async def fronts() -> AsyncIterator[tuple[Front, Front]]:
    cfg = config({"guarded": script("guarded")})
    async with (
        http_front(cfg) as open_front,
        http_front(cfg, SecurityPolicy(token=TOKEN)) as token_front,
    ):
        with anyio.fail_after(20):
            await until_ready(open_front.state)
            await until_ready(token_front.state)
        yield open_front, token_front


@pytest.mark.parametrize("page", ["http.md", "rest.md"])
async def test_checked_curl_examples_answer_as_documented(
    page: str, fronts: tuple[Front, Front]
) -> None:
    checked = examples(page)
    assert checked, f"{page} has no checked example"
    session: str | None = None
    async with httpx2.AsyncClient(timeout=10) as http:
        for example in checked:
            front = fronts[1] if example.token else fronts[0]
            request = parse_curl(example.command, session)
            with anyio.fail_after(10):
                response = await http.request(
                    request.method,
                    front.url + request.path,
                    headers=request.headers,
                    content=request.data,
                )
            session = response.headers.get("mcp-session-id", session)
            assert response.status_code == example.status, (example.command, response.text)
            if example.body == "json":
                assert example.documented is not None
                problems = list(same_shape(json.loads(example.documented), live_body(response)))
                assert not problems, (example.command, problems)
            elif example.body == "text":
                assert example.documented is not None
                for line in example.documented.splitlines():
                    if line.startswith("# TYPE"):
                        assert line in response.text, (example.command, line)


async def test_stdio_transcript_answers_as_documented(tmp_path: Path) -> None:
    transcript = [
        (block.info, json.loads(block.text))
        for block in blocks("stdio.md")
        if block.language == "json" and block.info.startswith("role=")
    ]
    assert [info for info, _ in transcript[:2]] == ["role=request", "role=response"]
    path = write_config(tmp_path, {"guarded": script("guarded")})
    async with raw_router(path) as router:
        answer: dict[str, Any] | None = None
        for info, message in transcript:
            if info == "role=request":
                with anyio.fail_after(20):
                    await router.send(message)
                    if "id" in message:
                        answer, _ = await router.answer(message["id"])
                continue
            assert info == "role=response" and answer is not None, message
            problems = list(same_shape(message, answer))
            assert not problems, (message.get("id"), problems)
            answer = None
