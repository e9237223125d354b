"""The real default model, loaded from its PyPI package with no network."""

import json
from pathlib import Path

import pytest

from router.cli.main import main
from router.core.errors import EmbeddingError
from router.embedding.base import Embedder
from router.embedding.manifest import ModelSpec, resolve_model
from router.embedding.sentence import SentenceTransformerEmbedder
from router.evaluation.dataset import load_catalog
from router.retrieval.fit import judge
from router.retrieval.retriever import Retriever, SearchMode
from tests.conftest import EXAMPLE_CATALOG, ROOT

OBVIOUS = {
    "what time is it in Tokyo": "time__get_current_time",
    "save my staged changes to git with a message": "git__git_commit",
    "post a message to our Slack channel": "slack__slack_post_message",
    "what will the weather be like over the next few days": "weather__get_forecast",
    "open a pull request to merge my feature branch": "github__create_pull_request",
}


def test_default_model_is_known_and_offline(real_embedder: Embedder) -> None:
    # the cache key names the backend and quantisation, so vectors never mix
    assert real_embedder.model_id.startswith("minilm-l6-tools@onnx-int8-dynamic-")
    vector = real_embedder.embed_query("hello")
    assert vector.shape == (384,)
    assert abs(float((vector**2).sum()) - 1.0) < 1e-4


@pytest.mark.parametrize("mode", [SearchMode.DENSE, SearchMode.HYBRID])
def test_real_model_ranks_obvious_queries_first(real_embedder: Embedder, mode: SearchMode) -> None:
    catalog, _ = load_catalog(EXAMPLE_CATALOG)
    retriever, _ = Retriever.build(catalog, real_embedder)
    for query, expected in OBVIOUS.items():
        top = retriever.search(query, k=1, mode=mode)[0]
        assert top.qualified_name == expected, query


def test_each_obvious_query_wins_by_a_margin(real_embedder: Embedder) -> None:
    # the old rank fusion tied "what time is it in Tokyo" between get_current_time and
    # convert_time exactly, and catalog order chose; scores must separate them
    catalog, _ = load_catalog(EXAMPLE_CATALOG)
    retriever, _ = Retriever.build(catalog, real_embedder)
    for query, expected in OBVIOUS.items():
        first, second = retriever.search(query, k=2)
        assert first.qualified_name == expected, query
        assert first.score - second.score >= 0.02, (query, first.score, second.score)


@pytest.mark.processes
def test_second_eval_run_embeds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "eval",
        "--catalog",
        str(EXAMPLE_CATALOG),
        "--queries",
        str(ROOT / "examples" / "queries.jsonl"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--mode",
        "hybrid,dense,bm25",
    ]
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert main([*args, "--json", str(first)]) == 0
    assert main([*args, "--json", str(second)]) == 0
    assert json.loads(first.read_text())["index"]["embedded"] == 32
    report = json.loads(second.read_text())
    assert report["index"] == {**report["index"], "embedded": 0, "from_cache": 32}
    assert "0 embedded, 32 from cache" in capsys.readouterr().err
    hybrid, dense, bm25 = report["runs"]
    # plain-language queries: the model must beat word overlap, and fusion must keep that
    assert dense["metrics"]["recall@10"] > bm25["metrics"]["recall@10"]
    assert hybrid["metrics"]["recall@10"] > bm25["metrics"]["recall@10"]


def test_missing_model_package_says_what_to_install() -> None:
    spec = ModelSpec(id="x", source="package:no_such_model_pkg", install="pip install no-such")
    with pytest.raises(EmbeddingError, match="pip install no-such"):
        SentenceTransformerEmbedder(spec).embed_query("hi")


def test_a_directory_without_a_model_is_a_clear_error(tmp_path: Path) -> None:
    spec = resolve_model(str(tmp_path))
    assert spec.id.startswith("local:")
    with pytest.raises(EmbeddingError, match="no sentence-transformers model"):
        SentenceTransformerEmbedder(spec).embed_query("hi")


def test_unknown_model_name_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="all-MiniLM-L6-v2"):
        resolve_model("no-such-model")


NOTHING_FITS = ("sing me a lullaby", "pause the music on my home theater")
"""Requests that no tool of the example servers serves (MSC-Bench's infeasible kind)."""


def test_the_default_model_says_when_nothing_fits(real_embedder: Embedder) -> None:
    # the floor is the one benchmarks.no_match calibrated for the shipped model
    catalog, _ = load_catalog(ROOT / "benchmarks" / "data" / "peoples_requests" / "catalog.jsonl")
    retriever, _ = Retriever.build(catalog, real_embedder)
    floor = retriever.match_floor
    assert floor is not None and 0.1 < floor < 0.5
    for query in NOTHING_FITS:
        fit = judge(retriever.search(query, k=5), floor)
        assert not fit.fits and fit.best_similarity is not None, query
        assert fit.best_similarity <= floor - 0.02, (query, fit.best_similarity)
    for query in ("what time is it in Tokyo", "fetch the page at https://example.com"):
        fit = judge(retriever.search(query, k=5), floor)
        assert fit.fits and fit.best_similarity is not None, query
        assert fit.best_similarity >= floor + 0.1, (query, fit.best_similarity)
