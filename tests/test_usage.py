"""Usage feedback: tools called after a search rise for similar queries, locally, and can be
turned off."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import anyio
import numpy as np

from router.embedding.hashing import HashingEmbedder
from router.retrieval.retriever import Retriever
from router.retrieval.usage import USAGE_FILE, UsageMemory
from tests.conftest import make_catalog
from tests.serving import raw_router, write_config

SCRIPTS = Path(__file__).resolve().parent / "upstreams"


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_remembered_query_lifts_its_tool_for_close_queries_only() -> None:
    memory = UsageMemory("m", threshold=0.8)
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


def test_a_lift_raises_a_tool_the_query_alone_ranks_low() -> None:
    catalog = make_catalog(
        ("mail", "send_email", "Send an email message"),
        ("chat", "post_message", "Post a message to a channel"),
    )
    retriever, _ = Retriever.build(catalog, HashingEmbedder())
    query = "send a message"
    plain = retriever.search(query, k=2)
    low = plain[-1].tool.key
    lifted = retriever.search(query, k=2, lift={low: 1.0})
    assert lifted[0].tool.key == low
    assert lifted[0].score > plain[0].score  # the bonus is the best fused score, times 1.0


def _config(tmp_path: Path, **router: object) -> Path:
    log = tmp_path / "calls.log"
    counting = [str(SCRIPTS / "counting.py"), str(log)]
    servers = {"count": {"command": sys.executable, "args": counting}}
    return write_config(tmp_path, servers, cache_dir=str(tmp_path / "cache"), **router)


async def test_a_call_after_a_search_is_remembered_and_learn_false_keeps_nothing(
    tmp_path: Path,
) -> None:
    learning, silent = tmp_path / "learning", tmp_path / "silent"
    learning.mkdir()
    silent.mkdir()
    for folder, settings in ((learning, {}), (silent, {"learn": False})):
        with anyio.fail_after(60):
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
