"""BM25's field-length normalisation (`Ranking.bm25_b`, issue 50 item 4): a long text that
says a word as often as a short one scores below it, by more as `b` rises, and not at all
below it at b = 0; the retriever builds its lexical index with the ranking's `b`."""

from __future__ import annotations

import dataclasses

from router.core.catalog import Catalog, ToolSpec
from router.retrieval.lexical import BM25_B, LexicalIndex
from router.retrieval.retriever import Retriever, SearchMode
from router.retrieval.types import DEFAULT

FILLER = " ".join(f"word{i}" for i in range(60))
TEXTS = [
    "post a message to a chat channel",
    f"post a message to a chat channel. {FILLER}",
    "read a file from disk",
]


def _lead(b: float) -> float:
    """How far the short text's score leads the long one's, as a share of the short's."""
    scores = LexicalIndex(TEXTS, b).scores("post message channel")
    return float((scores[0] - scores[1]) / scores[0])


def test_the_long_text_pays_for_its_length_more_as_b_rises() -> None:
    assert abs(_lead(0.0)) < 1e-6
    assert _lead(BM25_B) > 0.2
    assert _lead(1.0) > _lead(BM25_B) + 0.05
    assert DEFAULT.bm25_b == BM25_B


def test_the_retriever_builds_its_lexical_index_with_the_ranking_s_b() -> None:
    catalog = Catalog.from_specs(
        [
            ToolSpec(server="chat", name=f"tool_{i}", description=text)
            for i, text in enumerate(TEXTS)
        ]
    )

    def long_over_short(b: float) -> float:
        ranking = dataclasses.replace(DEFAULT, bm25_b=b)
        retriever, _ = Retriever.build(catalog, None, ranking=ranking)
        found = retriever.search("post message channel", k=3, mode=SearchMode.BM25)
        scores = {r.tool.name: r.score for r in found}
        return scores["tool_1"] / scores["tool_0"]

    assert long_over_short(1.0) < long_over_short(0.0) - 0.2
