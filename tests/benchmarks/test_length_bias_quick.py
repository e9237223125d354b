"""benchmarks.length_bias without a model: the length prior moves a long tool behind a terse
one whose score is close, never past a clear winner; each setting's figures and the
default's diagnostics come out per request (a hashing embedder, no process)."""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks import length_bias
from router.core.catalog import Catalog, ToolSpec
from router.embedding.hashing import HashingEmbedder
from router.evaluation.dataset import Query
from router.retrieval.retriever import Retriever
from router.retrieval.types import DEFAULT, ScoredTool

LONG = "Send a message. " + " ".join(f"Use this tool when {i}." for i in range(40))


def _specs() -> list[ToolSpec]:
    return [
        ToolSpec(server="chat", name="post_message", description="Post a message to a channel"),
        ToolSpec(server="mail", name="send_message", description=LONG),
        ToolSpec(server="fs", name="read_file", description="Read a file"),
    ]


def _scored(catalog: Catalog, scores: dict[str, float]) -> list[ScoredTool]:
    records = {r.name: r for r in catalog.records}
    ordered = sorted(scores, key=lambda n: -scores[n])
    return [ScoredTool(tool=records[n], rank=i, score=scores[n]) for i, n in enumerate(ordered, 1)]


def test_the_prior_puts_a_close_terse_tool_ahead_of_a_long_one_but_not_a_clear_loser() -> None:
    catalog = Catalog.from_specs(_specs())
    lengths = np.array([len(r.description) for r in catalog.records], dtype=np.float64)
    median = float(np.median(lengths))

    def order(scores: dict[str, float], weight: float) -> list[str]:
        found = _scored(catalog, scores)
        positions = [catalog.position(r.qualified_name) for r in found]
        ranked = length_bias.with_prior(found, lengths, median, weight, positions)
        return [catalog.records[p].name for p in ranked]

    close = {"send_message": 1.0, "post_message": 0.97, "read_file": 0.2}
    assert order(close, 0.0)[0] == "send_message"
    assert order(close, 0.1)[0] == "post_message"
    clear = {"send_message": 1.0, "post_message": 0.6, "read_file": 0.2}
    assert order(clear, 0.1)[0] == "send_message"


def test_per_query_gives_every_setting_and_the_default_s_diagnostics() -> None:
    catalog = Catalog.from_specs(_specs())
    embedder = HashingEmbedder()
    retrievers = {length_bias.BASE: Retriever.build(catalog, embedder, None)[0]}
    for b in length_bias.BS:
        ranking = dataclasses.replace(DEFAULT, bm25_b=b)
        retrievers[f"b={b:g}"] = Retriever.build(catalog, embedder, None, ranking=ranking)[0]
    queries = [
        Query(
            id="q1", text="post a message to #general", gold_groups=((("chat", "post_message"),),)
        ),
        Query(id="q2", text="read the file notes.txt", gold_groups=((("fs", "read_file"),),)),
    ]
    rows, diagnostics = length_bias.per_query(retrievers, queries)
    assert set(rows) == set(length_bias.settings())
    assert all(len(rows[s]["top1"]) == len(queries) for s in rows)
    assert len(diagnostics["gold_len"]) == len(queries)
    assert diagnostics["gold_len"][1] == len("Read a file")
    cell = {"per_query": rows, "diagnostics": diagnostics}
    found = length_bias.diagnosis(cell)
    assert found["top1_short_gold"][1] + found["top1_long_gold"][1] == len(queries)
