"""Usage feedback: tools called after a search rise for similar queries, locally, and can be
turned off."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import anyio
import numpy as np
import pytest

from router.embedding.hashing import HashingEmbedder
from router.retrieval.retriever import Retriever
from router.retrieval.types import DEFAULT
from router.retrieval.usage import USAGE_FILE, UsageMemory
from tests.conftest import make_catalog
from tests.support.serving import raw_router, write_config

SCRIPTS = Path(__file__).resolve().parents[1] / "upstreams"
STARTUP_WAIT = 60


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_remembered_query_lifts_its_tool_for_close_queries_only() -> None:
    memory = UsageMemory("m", threshold=0.8)
    memory.record("send the weekly report", _unit(1, 0, 0), [("mail", "send_email")])
    assert memory.lift(_unit(1, 0, 0)) == {}  # one search and call teaches nothing
    memory.record("send the weekly report", _unit(1, 0, 0), [("mail", "send_email")])
    assert memory.lift(_unit(1, 0, 0)) == {("mail", "send_email"): 1.0}
    close = memory.lift(_unit(1, 0.3, 0))  # cosine 0.958
    assert 0.7 < close[("mail", "send_email")] < 0.9
    assert memory.lift(_unit(0, 1, 0)) == {}  # unrelated: nothing lifted
    assert memory.lift(_unit(1, 1, 0)) == {}  # cosine 0.707, under the threshold


def test_pairs_persist_per_model_and_the_oldest_go_first(tmp_path: Path) -> None:
    path = tmp_path / USAGE_FILE
    first = UsageMemory("model-a", path, max_pairs=2)
    first.record("one", _unit(1, 0), [("s", "a")])
    first.record("two", _unit(0, 1), [("s", "b")])
    first.record("two", _unit(0, 1), [("s", "b")])  # a repeat counts, it adds no pair
    first.record("three", _unit(1, 1), [("s", "c")])
    again = UsageMemory("model-a", path, max_pairs=2)
    assert len(again) == 2
    assert ("s", "a") not in again.lift(_unit(1, 0))  # the least recently used went
    assert again.lift(_unit(0, 1)) == {("s", "b"): 1.0}
    calls = sqlite3.connect(path).execute("SELECT calls FROM usage WHERE query = 'two'")
    assert calls.fetchone() == (2,)
    assert len(UsageMemory("model-b", path)) == 0  # another model's vectors never mix


def test_memory_holds_at_most_max_pairs_the_least_recently_used_go() -> None:
    """In memory as on disk: a long-running router must not grow with every new query."""
    memory = UsageMemory("m", max_pairs=2)
    memory.record("one", _unit(1, 0, 0), [("s", "a")])
    memory.record("two", _unit(0, 1, 0), [("s", "b")])
    memory.record("one", _unit(1, 0, 0), [("s", "a")])  # used again: now the most recent
    memory.record("three", _unit(0, 0, 1), [("s", "c")])  # takes the row of "two"
    memory.record("three", _unit(0, 0, 1), [("s", "c")])
    assert len(memory) == 2
    assert memory.lift(_unit(0, 1, 0)) == {}
    assert memory.lift(_unit(1, 0, 0)) == {("s", "a"): 1.0}
    assert memory.lift(_unit(0, 0, 1)) == {("s", "c"): 1.0}
    for index in range(100):  # many more, all distinct: still two held
        memory.record(f"q{index}", _unit(1, index, 0), [("s", f"t{index}")])
    assert len(memory) == 2


def test_vectors_of_another_size_lift_nothing() -> None:
    memory = UsageMemory("m")
    memory.record("q", _unit(1, 0, 0), [("s", "t")])
    assert memory.lift(_unit(1, 0)) == {}


def test_a_lift_reorders_close_candidates_but_cannot_pull_one_up_from_deep() -> None:
    """The lift is capped (`Ranking.usage_cap`): it swaps two close candidates, and a tool
    the query ranks far below stays below however strongly it is lifted."""
    catalog = make_catalog(
        ("gmail", "send_email", "Send an email message to a person"),
        ("outlook", "send_email", "Send an email message to a person"),
        ("files", "delete_file", "Remove a file from the disk"),
    )
    retriever, _ = Retriever.build(catalog, HashingEmbedder())
    query = "send an email message"
    plain = retriever.search(query, k=3)
    first, second = plain[0], plain[1]
    assert first.score - second.score < DEFAULT.usage_cap * first.score  # close: within it
    swapped = retriever.search(query, k=3, lift={second.tool.key: 1.0})
    assert swapped[0].tool.key == second.tool.key
    deep = retriever.search(query, k=3, lift={("files", "delete_file"): 1.0})
    assert deep[0].tool.key == first.tool.key
    assert deep[-1].tool.key == ("files", "delete_file")


def _config(tmp_path: Path, **router: object) -> Path:
    """The counting upstream, and a start-up wait (`timeouts.connect`) long enough for a
    loaded machine: a call that came after it would hear its tool is not listed yet."""
    log = tmp_path / "calls.log"
    counting = [str(SCRIPTS / "counting.py"), str(log)]
    servers = {"count": {"command": sys.executable, "args": counting}}
    return write_config(
        tmp_path,
        servers,
        cache_dir=str(tmp_path / "cache"),
        timeouts={"connect": STARTUP_WAIT},
        **router,
    )


@pytest.mark.processes
async def test_a_call_after_a_search_is_remembered_and_learn_false_keeps_nothing(
    tmp_path: Path,
) -> None:
    learning, silent = tmp_path / "learning", tmp_path / "silent"
    learning.mkdir()
    silent.mkdir()
    for folder, settings in ((learning, {}), (silent, {"learn": False})):
        with anyio.fail_after(STARTUP_WAIT + 60):
            async with raw_router(_config(folder, **settings), bm25_only=False) as router:
                await router.initialize()
                await router.search_text("record one call on the counter")
                result = await router.call("count__touch", {})
                assert result["isError"] is False
                # a second call of the same tool after the same search teaches nothing new
                await router.call("count__touch", {})
    rows = sqlite3.connect(learning / "cache" / USAGE_FILE).execute(
        "SELECT query, server, tool, calls FROM usage"
    )
    assert rows.fetchall() == [("record one call on the counter", "count", "touch", 1)]
    assert not (silent / "cache" / USAGE_FILE).exists()


@pytest.mark.processes
@pytest.mark.parametrize("learn", [None, True])
async def test_on_the_shared_http_front_one_client_cannot_teach_the_ranking(
    tmp_path: Path, learn: bool | None
) -> None:
    """The two-client attack: on `serve --http` with no identities, learning is off unless
    the config turns it on, so client A's searches and calls leave nothing that lifts a tool
    for client B; with `"learn": true` the same traffic is learnt."""
    from tests.support.http_serving import config as front_config
    from tests.support.http_serving import http_front, streamable_client, until_indexed

    log = tmp_path / "calls.log"
    counting = [str(SCRIPTS / "counting.py"), str(log)]
    servers = {"count": {"command": sys.executable, "args": counting}}
    settings = {} if learn is None else {"learn": learn}
    cfg = front_config(servers, cache_dir=str(tmp_path / "cache"), **settings)
    async with http_front(cfg, embedder=HashingEmbedder()) as front:
        with anyio.fail_after(60):
            await until_indexed(front.state)
            await front.state.readiness.until_covered()  # the model (and any memory) loaded
            async with streamable_client(front.mcp, mode="legacy") as a:  # a session
                for _ in range(3):
                    await a.call_tool("search_tools", {"query": "record one call on the counter"})
                    await a.call_tool("count__touch", {})
    usage = tmp_path / "cache" / USAGE_FILE
    if learn is None:
        assert front.state.searcher.usage is None and not usage.exists()
    else:
        rows = sqlite3.connect(usage).execute("SELECT server, tool, calls FROM usage")
        assert rows.fetchall() == [("count", "touch", 3)]


def test_each_principal_learns_apart_and_its_file_names_no_one(tmp_path: Path) -> None:
    """One principal's calls never lift a tool for another, nor for the shared scope; each
    principal's pairs persist in a file named by a hash, and come back after eviction."""
    from router.retrieval.usage_scopes import MAX_LOADED, USAGE_FOLDER, UsageScopes

    scopes = UsageScopes("m", tmp_path)
    mallory = scopes.memory_for("issuer\x1fmallory")
    for _ in range(3):  # mallory calls a wrong tool again and again
        mallory.record("what time is it", _unit(1, 0), [("evil", "exfiltrate")])

    assert mallory.lift(_unit(1, 0)) == {("evil", "exfiltrate"): 1.0}
    assert scopes.memory_for("issuer\x1falice").lift(_unit(1, 0)) == {}
    assert scopes.memory_for(None).lift(_unit(1, 0)) == {}
    files = sorted(p.name for p in (tmp_path / USAGE_FOLDER).iterdir())
    assert len(files) == 1 and "mallory" not in files[0]  # alice has recorded nothing yet
    for number in range(MAX_LOADED + 1):  # mallory's memory is evicted from the process
        scopes.memory_for(f"issuer\x1fuser{number}")
    again = scopes.memory_for("issuer\x1fmallory")
    assert again is not mallory and again.lift(_unit(1, 0)) == {("evil", "exfiltrate"): 1.0}
