"""Signing in to an OAuth-protected upstream, end to end, with real processes throughout.

The upstream is `tests/upstreams/oauth_protected.py` (the SDK's own auth support: dynamic
registration, authorization code with PKCE, refresh, short-lived access tokens), run as a
process; `mcp-router auth login|status|logout` run as the CLI, with `BROWSER` set to
`tests.conformance.follow_redirects` (a person clicking "allow"); `mcp-router serve` runs as a
child driven over stdio as a host would drive it (`Host`, which can also answer a URL-mode
elicitation by following the URL). What the authorization server did is read from the
fixture's `/control/stats`; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult

from router.config import RemoteServer, load_config
from router.config.oauth import may_carry_tokens
from router.upstream.auth.callback import free_port, listening
from router.upstream.auth.providers import Redirect, token_files, upstream_auth
from router.upstream.auth.storage import StoredCredentials
from tests.conftest import ROOT
from tests.support.http_serving import http_front
from tests.support.serving import RawRouter, close_router, write_config

pytestmark = pytest.mark.processes

ROUTER = [sys.executable, "-m", "router"]
FOLLOWER = [sys.executable, "-m", "tests.conformance.follow_redirects"]
BROWSER = " ".join([*FOLLOWER, "%s"])
NAME = "secure"
START_LIMIT = 20.0
"""Seconds a process may take to start (the fixture printing its URL)."""
CLI_LIMIT = 60.0
"""Seconds one `mcp-router auth ...` command may take, sign-in included."""
SHORT_LIFETIME = 2
"""Seconds the short-lived upstream's access tokens live."""


# -- the upstream ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    """A running `oauth_protected` fixture."""

    url: str
    log: Path

    @property
    def issuer(self) -> str:
        return self.url.removesuffix("/mcp")

    async def stats(self) -> dict[str, int]:
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = await http.get(f"{self.issuer}/control/stats")
            answer.raise_for_status()
            counts: dict[str, int] = answer.json()
            return counts

    async def revoke_refresh_tokens(self) -> None:
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = await http.post(f"{self.issuer}/control/revoke", params={"what": "refresh"})
            answer.raise_for_status()


def start_upstream(folder: Path, token_lifetime: int, *options: str) -> Iterator[Upstream]:
    """`oauth_protected` running, with its command-line `options` (`--login`)."""
    log = folder / "oauth_protected.log"
    with log.open("ab") as errors:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.upstreams.oauth_protected",
                "--token-lifetime",
                str(token_lifetime),
                *options,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_LIMIT)
        assert ready, f"the fixture printed no URL within {START_LIMIT}s: {log.read_text()}"
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, log.read_text())
        yield Upstream(url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """Access tokens that outlive every test: nothing here refreshes."""
    yield from start_upstream(tmp_path_factory.mktemp("upstream"), 3600)


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """Access tokens of `SHORT_LIFETIME` seconds, for refresh."""
    yield from start_upstream(tmp_path_factory.mktemp("short_lived"), SHORT_LIFETIME)


# -- the router's CLI and its credentials file -----------------------------------------------


@dataclass(frozen=True)
class Setup:
    """One test's router config for one upstream, its cache dir its own."""

    config: Path
    upstream: Upstream

    @property
    def cache_dir(self) -> Path:
        return self.config.parent / "cache"

    @property
    def server(self) -> RemoteServer:
        return RemoteServer(url=self.upstream.url)

    @property
    def credentials(self) -> Path:
        return token_files(self.cache_dir, self.server).path

    def stored(self) -> StoredCredentials | None:
        return token_files(self.cache_dir, self.server).describe()

    def tokens(self) -> dict[str, Any]:
        """The raw token values on disk (to look for them where they must not be)."""
        data: dict[str, Any] = json.loads(self.credentials.read_text(encoding="utf-8"))
        tokens: dict[str, Any] = data["tokens"]
        return tokens


def router_setup(folder: Path, upstream: Upstream, **router: Any) -> Setup:
    folder.mkdir(parents=True, exist_ok=True)
    return Setup(write_config(folder, {NAME: {"url": upstream.url}}, **router), upstream)


def cli(*arguments: str, verbose: bool = False) -> subprocess.CompletedProcess[str]:
    """`mcp-router [-v] ARGUMENTS`, its browser the redirect follower."""
    return subprocess.run(
        [*ROUTER, *(["-v"] if verbose else []), *arguments],
        cwd=ROOT,
        env={**os.environ, "BROWSER": BROWSER},
        capture_output=True,
        text=True,
        timeout=CLI_LIMIT,
    )


def login(setup: Setup, *, verbose: bool = False) -> subprocess.CompletedProcess[str]:
    done = cli("auth", "login", NAME, "--config", str(setup.config), verbose=verbose)
    assert done.returncode == 0, done.stderr
    return done


def status(setup: Setup) -> str:
    done = cli("auth", "status", "--config", str(setup.config))
    assert done.returncode == 0, done.stderr
    return done.stdout


def login_command(setup: Setup) -> str:
    return f"mcp-router auth login {NAME} --config {setup.config}"


async def until_expired(setup: Setup) -> None:
    """Until the stored access token's `obtained_at + expires_in` has passed.

    Expiry is wall-clock time with nothing to wait on, so this polls the credentials file
    (re-read each time: a refresh meanwhile moves the expiry) in steps of at most 0.1 s, to a
    deadline the caller sets. Once the stored expiry has passed, the router's own count has
    run out too: it counts from when it loaded or obtained the token, never later than the
    file's `obtained_at`."""
    while True:
        stored = setup.stored()
        assert stored is not None and stored.expires_at is not None, stored
        left = stored.expires_at - time.time()
        if left < 0:
            return
        await anyio.sleep(min(0.1, left + 0.01))


# -- the router serving, driven as a host ----------------------------------------------------


class Host(RawRouter):
    """A host over stdio: keeps the router's stderr, answers URL elicitations (if it declared
    them) by following the URL as a person signing in would."""

    def __init__(self, process: anyio.abc.Process) -> None:
        super().__init__(process)
        assert process.stderr is not None
        self._stderr = BufferedByteReceiveStream(process.stderr)
        self.log: list[str] = []
        self._logged = anyio.Event()
        self.elicitations: list[dict[str, Any]] = []

    async def read_stderr(self) -> None:
        while True:
            try:
                line = await self._stderr.receive_until(b"\n", 1 << 20)
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                return
            self.log.append(line.decode(errors="replace"))
            self._logged.set()
            self._logged = anyio.Event()

    async def logged(self, text: str) -> None:
        """Until the router logs a line with `text` (bound it)."""
        while not any(text in line for line in self.log):
            await self._logged.wait()

    async def answer(self, request_id: object) -> tuple[dict[str, Any], bytes]:
        while True:
            message, line = await self._message()
            if message.get("id") == request_id and "method" not in message:
                return message, line
            self.notifications.append(message)

    async def notified(self, method: str) -> dict[str, Any]:
        """The next notification `method` (one already kept, or the next to come)."""
        for kept in self.notifications:
            if kept.get("method") == method:
                self.notifications.remove(kept)
                return kept
        while True:
            message, _ = await self._message()
            if message.get("method") == method:
                return message
            self.notifications.append(message)

    async def _message(self) -> tuple[dict[str, Any], bytes]:
        """The next message that is not a request to the host (those are answered here)."""
        while True:
            line = await self.receive_line()
            message: dict[str, Any] = json.loads(line)
            if message.get("method") == "elicitation/create" and "id" in message:
                await self.send(
                    {"jsonrpc": "2.0", "id": message["id"], "result": await self._sign_in(message)}
                )
                continue
            return message, line

    async def _sign_in(self, request: dict[str, Any]) -> dict[str, Any]:
        params = request["params"]
        self.elicitations.append(params)
        if params.get("mode") != "url":
            return {"action": "decline"}
        opened = await anyio.run_process([*FOLLOWER, params["url"]], cwd=ROOT, check=False)
        return {"action": "accept" if opened.returncode == 0 else "cancel"}

    async def handshake(self, *, url_elicitation: bool) -> None:
        capabilities: dict[str, Any] = {"elicitation": {"url": {}}} if url_elicitation else {}
        await self.result(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "auth-test-host", "version": "0"},
            },
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def tool_names(self) -> list[str]:
        return [tool["name"] for tool in (await self.result("tools/list"))["tools"]]

    async def call_text(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """The text of a `tools/call` answer, a result or an error alike."""
        answer = await self.request("tools/call", {"name": name, "arguments": arguments or {}})
        if "error" in answer:
            return f"error {answer['error']['code']}: {answer['error']['message']}"
        result = answer["result"]
        text = "\n".join(block.get("text", "") for block in result["content"])
        return f"isError: {text}" if result.get("isError") else text

    def stderr_text(self) -> str:
        return "".join(self.log)


@asynccontextmanager
async def serving(setup: Setup, *, verbose: bool = False) -> AsyncIterator[Host]:
    """`mcp-router [-v] serve` on `setup`'s config; stdin closed and the process gone after."""
    verbosity = ["-v"] if verbose else []
    process = await anyio.open_process(
        [*ROUTER, *verbosity, "serve", "--bm25-only", "--config", str(setup.config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=setup.config.parent,
    )
    host = Host(process)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(host.read_stderr)
        try:
            yield host
        finally:
            await close_router(process, host.finish)


WHOAMI = f"{NAME}__whoami"


async def until_tools(host: Host) -> list[str]:
    """Until the router lists the upstream's tools (mode "all" says when: list_changed)."""
    names = await host.tool_names()
    while WHOAMI not in names:
        await host.notified("notifications/tools/list_changed")
        names = await host.tool_names()
    return names


def assert_no_secret(texts: list[str], *secrets: str) -> None:
    for secret in secrets:
        assert len(secret) >= 16
        for text in texts:
            assert secret not in text


# -- the tests -------------------------------------------------------------------------------


def test_login_signs_in_and_keeps_the_tokens_private(upstream: Upstream, tmp_path: Path) -> None:
    setup = router_setup(tmp_path, upstream, mode="all")

    done = login(setup, verbose=True)

    assert f"{NAME}: signed in (issuer {upstream.issuer}," in done.stdout
    assert "DEBUG" in done.stderr  # -v: debug logs were on, and still no token below
    assert stat.S_IMODE(setup.credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(setup.credentials.parent.stat().st_mode) == 0o700
    tokens = setup.tokens()
    assert_no_secret([done.stdout, done.stderr], tokens["access_token"], tokens["refresh_token"])
    assert f"{NAME}: signed in (issuer {upstream.issuer}, scopes notes:read" in status(setup)


async def test_a_restarted_router_serves_with_the_stored_tokens(
    upstream: Upstream, tmp_path: Path
) -> None:
    setup = router_setup(tmp_path, upstream, mode="all")
    login(setup)
    stored = setup.stored()
    assert stored is not None and stored.client_id is not None
    before = await upstream.stats()
    logs: list[str] = []

    for _ in range(2):  # two serve processes, one after the other
        async with serving(setup, verbose=True) as host:
            with anyio.fail_after(30):
                await host.handshake(url_elicitation=False)
                assert WHOAMI in await until_tools(host)
                answer = await host.call_text(WHOAMI)
            logs.append(host.stderr_text())
        assert answer == f"client {stored.client_id} with scopes notes:read"
        assert host.elicitations == []

    after = await upstream.stats()
    for grant in ("registrations", "authorizations", "code_grants", "refresh_grants"):
        assert after.get(grant, 0) == before.get(grant, 0), grant  # no sign-in, no refresh
    tokens = setup.tokens()
    assert_no_secret(logs, tokens["access_token"], tokens["refresh_token"])


async def test_an_expired_token_is_refreshed_and_a_refused_refresh_needs_sign_in(
    short_lived: Upstream, tmp_path: Path
) -> None:
    setup = router_setup(tmp_path, short_lived, mode="all")
    login(setup)
    seen = [setup.tokens()]
    logs: list[str] = []

    # 1. In one session: the token expires, the next call refreshes it first.
    async with serving(setup, verbose=True) as host:
        with anyio.fail_after(30):
            await host.handshake(url_elicitation=False)
            await until_tools(host)
            before = await short_lived.stats()
            await until_expired(setup)
            answer = await host.call_text(WHOAMI)
        after = await short_lived.stats()
        logs.append(host.stderr_text())
    assert answer.startswith("client "), answer
    assert after.get("refresh_grants", 0) > before.get("refresh_grants", 0)
    # refreshed before sending, not after a refused request
    assert after.get("rejected_tokens", 0) == before.get("rejected_tokens", 0)
    seen.append(setup.tokens())
    assert seen[-1]["access_token"] != seen[0]["access_token"]  # the refresh was stored

    # 2. A restart after the stored token expired: refreshed, not sent stale.
    with anyio.fail_after(30):
        await until_expired(setup)
    before = await short_lived.stats()
    async with serving(setup, verbose=True) as host:
        with anyio.fail_after(30):
            await host.handshake(url_elicitation=False)
            await until_tools(host)
            answer = await host.call_text(WHOAMI)
            after = await short_lived.stats()
            seen.append(setup.tokens())

            # 3. The grant revoked: after expiry the refresh is refused, and the upstream
            # needs a sign-in, which the answers name (never a bare 401).
            await short_lived.revoke_refresh_tokens()
            await until_expired(setup)
            answers = [await host.call_text(WHOAMI)]
            await host.logged(f"upstream {NAME}: sign-in needed")
            answers.append(await host.call_text(WHOAMI))
        refused = await short_lived.stats()
        logs.append(host.stderr_text())
    assert answer.startswith("client "), answer
    assert after.get("refresh_grants", 0) > before.get("refresh_grants", 0)
    assert after.get("rejected_tokens", 0) == before.get("rejected_tokens", 0)
    assert refused.get("refused_refreshes", 0) > after.get("refused_refreshes", 0)
    assert answers[-1].startswith("isError: "), answers
    assert f"sign-in needed: run `{login_command(setup)}`" in answers[-1]
    for text in answers:  # the call that met the refused refresh says so too
        assert not text.startswith("client "), answers
        assert "401" not in text, answers
        assert f"sign-in needed: run `{login_command(setup)}`" in text, answers
    assert_no_secret(
        logs, *(tokens[key] for tokens in seen for key in ("access_token", "refresh_token"))
    )


async def test_logout_forgets_the_tokens_and_serving_then_needs_a_sign_in(
    upstream: Upstream, tmp_path: Path
) -> None:
    setup = router_setup(tmp_path, upstream)  # search mode: search_tools reports the down
    login(setup)
    assert setup.credentials.exists()

    done = cli("auth", "logout", NAME, "--config", str(setup.config))

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{NAME}: signed out"
    assert not setup.credentials.exists()
    assert f"{NAME}: sign-in needed: {login_command(setup)}" in status(setup)
    # A host without URL elicitation: nobody can sign in, so the router says how to.
    async with serving(setup) as host:
        with anyio.fail_after(30):
            await host.handshake(url_elicitation=False)
            await host.logged(f"upstream {NAME}: sign-in needed")
            found = await host.call("search_tools", {"query": "who am I"})
    down = {entry["name"]: entry["lastError"] for entry in found["structuredContent"]["down"]}
    assert down == {NAME: f"sign-in needed: run `{login_command(setup)}`"}
    assert f"sign-in needed: run `{login_command(setup)}`" in found["content"][0]["text"]
    assert "401" not in found["content"][0]["text"]
    assert host.elicitations == []
    stored = setup.stored()  # the attempt may have registered a client; no tokens came
    assert stored is None or not stored.has_access


@pytest.mark.parametrize("host_arrives", ["at once", "after the first attempt"])
async def test_a_host_with_url_elicitation_signs_the_upstream_in_within_the_session(
    upstream: Upstream, tmp_path: Path, host_arrives: str
) -> None:
    """No stored tokens: the router asks the host to open the sign-in URL, the upstream
    comes up in the same serve process and a call succeeds. A host that initializes only
    after the first attempt found no one to ask is asked at the next attempt."""
    setup = router_setup(tmp_path, upstream, mode="all")
    before = await upstream.stats()
    async with serving(setup) as host:
        with anyio.fail_after(45):
            if host_arrives != "at once":
                await host.logged("no client is connected")
            await host.handshake(url_elicitation=True)
            await until_tools(host)
            answer = await host.call_text(WHOAMI)
    after = await upstream.stats()

    stored = setup.stored()
    assert stored is not None and stored.has_access and stored.has_refresh
    assert answer == f"client {stored.client_id} with scopes notes:read"
    assert [params["mode"] for params in host.elicitations] == ["url"]
    assert host.elicitations[0]["url"].startswith(f"{upstream.issuer}/authorize?")
    assert after["code_grants"] == before.get("code_grants", 0) + 1
    tokens = setup.tokens()
    assert_no_secret([host.stderr_text()], tokens["access_token"], tokens["refresh_token"])


def test_plain_http_beyond_this_machine_never_carries_tokens(tmp_path: Path) -> None:
    assert may_carry_tokens("https://mcp.example.com/mcp")
    assert may_carry_tokens("http://127.0.0.1:8000/mcp")
    assert may_carry_tokens("http://localhost:8000/mcp")
    assert may_carry_tokens("http://[::1]:8000/mcp")
    assert not may_carry_tokens("http://mcp.example.com/mcp")
    assert not may_carry_tokens("http://192.0.2.10/mcp")  # TEST-NET: never reached
    assert not may_carry_tokens("ftp://127.0.0.1/mcp")
    config = write_config(tmp_path, {NAME: {"url": "http://192.0.2.10/mcp"}})

    done = cli("auth", "login", NAME, "--config", str(config))

    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "plain http beyond this machine: tokens go over https only" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "cache" / "auth").exists()
    shown = cli("auth", "status", "--config", str(config)).stdout
    assert f"{NAME}: plain http beyond this machine: tokens are never sent" in shown


async def test_the_callback_port_is_free_again_after_a_sign_in_that_failed() -> None:
    """A serving router binds the registered redirect port at each attempt; one that ended
    with an error (nobody to ask, a declined prompt) must leave it free and watchable."""
    port = free_port()
    for _ in range(2):
        with pytest.raises(ExceptionGroup):
            async with listening(port):
                raise RuntimeError("the host could not be asked")
    async with listening(port) as callback, httpx2.AsyncClient(timeout=10) as http:
        with anyio.fail_after(10):
            callback.expect("s")
            page = await http.get(f"http://127.0.0.1:{port}/callback?code=c0de&state=s")
            result = await callback.result("s")
    assert page.status_code == 200
    assert (result.code, result.state) == ("c0de", "s")


async def test_each_redirect_goes_to_the_flow_of_its_state_and_a_stray_one_to_none() -> None:
    """A connection that signs in twice on one listener (its authorization server changed)
    gets the second flow's code in the second flow, never the first one's; a redirect with a
    state nobody waits for, or one already used, changes nothing."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/callback"
    async with listening(port) as callback, httpx2.AsyncClient(timeout=10) as http:
        with anyio.fail_after(10):
            callback.expect("first")
            assert (await http.get(f"{base}?code=one&state=first")).status_code == 200
            assert (await callback.result("first")).code == "one"
            callback.expect("second")
            replayed = await http.get(f"{base}?code=one&state=first")
            stray = await http.get(f"{base}?code=forged&state=nobody")
            assert (replayed.status_code, stray.status_code) == (400, 400)
            assert b"unknown here" in stray.content
            assert (await http.get(f"{base}?code=two&state=second")).status_code == 200
            second = await callback.result("second")
    assert (second.code, second.state) == ("two", "second")


async def test_inspect_and_the_http_front_name_the_sign_in_an_upstream_needs(
    upstream: Upstream, tmp_path: Path
) -> None:
    """With no stored tokens: `mcp-router inspect` reports the upstream as needing sign-in
    with the command (exit 1, it is not healthy), and the HTTP front's `/healthz` and
    `/v1/tools` say so in their fields; neither a bare 401."""
    setup = router_setup(tmp_path, upstream)
    inspected = cli("inspect", "--config", str(setup.config), "--wait", "30")
    assert inspected.returncode == 1, inspected.stderr
    assert f"sign-in needed: run `{login_command(setup)}`" in inspected.stdout
    assert "401" not in inspected.stdout
    cfg = load_config(setup.config)
    async with http_front(cfg) as front, httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(30):
            await front.state.pool.wait_settled()
            health = (await http.get("/healthz")).json()
            tools = (await http.get("/v1/tools")).json()
    assert health["sign_in_needed"] == {NAME: f"sign-in needed: run `{login_command(setup)}`"}
    [listed] = tools["upstreams"]
    assert listed["sign_in_needed"] is True and "401" not in (listed["last_error"] or "")


class Person:
    """Signs in as a person clicking "allow" would, once both connections have met the
    server's 401: so two sign-ins, if there are two, overlap."""

    def __init__(self, refused: dict[str, anyio.Event]) -> None:
        self._refused = refused
        self.shown: list[str] = []
        self._result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        self.shown.append(authorization_url)
        for event in self._refused.values():
            await event.wait()
        async with httpx2.AsyncClient(timeout=10) as http:
            approved = await http.get(authorization_url)  # approves at once: a redirect
        back = httpx2.URL(approved.headers["location"]).params
        self._result = AuthorizationCodeResult(code=back["code"], state=back.get("state"))

    async def callback(self) -> AuthorizationCodeResult:
        assert self._result is not None
        return self._result


async def test_two_connections_that_meet_401_at_once_sign_in_once(
    upstream: Upstream, tmp_path: Path
) -> None:
    """A primary connection and its handshake twin (two providers, one credentials record,
    one gate) both meet the server's 401: the first signs in while the second waits, and the
    second then connects with the tokens the first stored. One authorization, one prompt."""
    server = RemoteServer(url=upstream.url)
    files = token_files(tmp_path / "cache", server)
    gate = anyio.Lock()
    refused = {name: anyio.Event() for name in ("primary", "twin")}
    people = {name: Person(refused) for name in refused}
    before = await upstream.stats()

    async def connect(name: str) -> list[str]:
        async def seen(response: httpx2.Response) -> None:
            if response.status_code == 401 and response.request.url == upstream.url:
                refused[name].set()

        port = free_port()
        auth = upstream_auth(server, files, people[name], Redirect(port), gate=gate)
        hooks = {"response": [seen]}
        async with httpx2.AsyncClient(auth=auth, event_hooks=hooks, timeout=30) as http:
            transport = streamable_http_client(upstream.url, http_client=http)
            async with Client(transport, mode="legacy") as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    listed: dict[str, list[str]] = {}
    with anyio.fail_after(CLI_LIMIT):
        async with anyio.create_task_group() as group:
            for name in refused:

                async def one(name: str = name) -> None:
                    listed[name] = await connect(name)

                group.start_soon(one)
    after = await upstream.stats()

    assert "get_forecast" in listed["primary"] and listed["twin"] == listed["primary"]
    assert all(event.is_set() for event in refused.values())  # both were refused at once
    assert after.get("authorizations", 0) - before.get("authorizations", 0) == 1
    assert sorted(len(person.shown) for person in people.values()) == [0, 1]
