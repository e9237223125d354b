"""Frozen retrieval results that carry the reason for their rank."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from router.core.catalog import ToolRecord


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    DENSE = "dense"
    BM25 = "bm25"


@dataclass(frozen=True, slots=True)
class ScoredTool:
    """One ranked tool with the score of every signal that placed it.

    `score` is the score that ordered the list: for hybrid, the fused score (relative score
    fusion by default, reciprocal rank fusion where `Ranking.fusion` asks for it, plus any
    bonuses); cosine for dense; BM25 for bm25. Signal ranks are 1-based; `None` means the
    signal did not retrieve it.
    """

    tool: ToolRecord
    rank: int
    score: float
    dense_score: float | None = None
    dense_rank: int | None = None
    bm25_score: float | None = None
    bm25_rank: int | None = None
    exact_match: bool = False
    pinned: bool = False

    @property
    def qualified_name(self) -> str:
        return self.tool.qualified_name


@dataclass(frozen=True, slots=True)
class Ranking:
    """How hybrid search orders tools. The defaults are what won on the development half of
    the public query sets (benchmarks/README.md, "Ablation"); the BM25 weight and the step
    clauses were chosen again for the tool-search model, each set ranked by the model trained
    without it (`benchmarks.ranking_tune`). `PREVIOUS` is the ranking they replaced, kept so
    the benchmarks can compare against it.

    - `fusion`: "score" adds each signal's score relative to that signal's best for the
      query (dense cosine / best cosine, BM25 / best BM25), BM25 weighted `bm25_weight`;
      "rrf" is reciprocal rank fusion with constant `rrf_k`.
    - `step_weight`: a multi-step request's step clauses (at most `step_parts`) are ranked
      too, and a tool keeps its best score: the whole request's, or a step's times this
      weight (0: no steps). On by default since the tool-search model was trained with
      multi-step requests: it lifts multi-tool requests (MSC-Bench L4) and, on dev halves
      the models never saw, the mean Recall@5 (`benchmarks.ranking_tune`), for an embedding
      and a ranking per clause; `router.steps: false` turns it off.
    - `named_server_bonus`: added to every tool of a server the request names ("on GitHub").
    - `companion_bonus`: added to the leading tool's server-mates (tasks that need several
      tools often need them from one server). Off: it did not win on the dev half.
    - `usage_bonus`: added, times its strength, to a tool called after a similar earlier
      query (`router.retrieval.usage`), at most `usage_cap`.

    Bonuses are fractions of the query's best fused score.
    """

    fusion: str = "score"
    bm25_weight: float = 0.3
    rrf_k: float = 20.0
    step_weight: float = 0.8
    step_parts: int = 8
    """The most step clauses a request is ranked by (the last one takes the rest)."""
    step_quota: int = 0
    """How many of each step clause's own best tools go ahead of every other tool (0: none;
    they then rank by score like the rest). Off: on the dev halves, each set ranked by the
    model trained without it (`benchmarks.ranking_tune`'s harness), a quota barely moved the
    mean Recall@5 and cost MSC-Bench's multi-tool requests at scale (benchmarks/README.md,
    "A place up front for each step")."""
    named_server_bonus: float = 0.1
    companion_bonus: float = 0.0
    server_bonus: float = 0.0
    """Added to the tools of the servers nearest the request as wholes
    (`router.retrieval.server_signal`), times their similarity relative to the nearest. Off:
    chosen on dev (0.1), it lost beyond the interval on test halves (MSC-Bench top-1, BFCL
    hit@5 at +20k) and gained only on MetaTool (`benchmarks.server_signal`)."""
    usage_bonus: float = 1.0
    server_share: float = 0.8
    """The most of the top k one server may take unless the query names it (its tools past
    that move behind the others'): 4 of 5, 8 of 10. So a server with many look-alike tools,
    or words stuffed into them, cannot fill the top k. Chosen on the dev half at each set's
    own size (the figures are in commit 4a78ff0's message): against no cap it costs next to
    nothing in Recall@5, while a tighter 0.6 costs more, above all on MSC-Bench, whose
    multi-tool tasks often need several tools of one server."""
    usage_cap: float = 0.1
    """The most a usage lift adds, as a fraction of the best fused score: enough to reorder
    close candidates, never to pull a tool from deep in the list to the top."""
    bm25_b: float = 0.75
    """BM25's field-length normalisation (`router.retrieval.lexical.BM25_B`), read when the
    retriever's lexical index is built (`Retriever.with_ranking` keeps the index it has).
    0.9 and 1 did not raise the dev halves' mean of top-1 and hit@5 over both people's sets
    and the public sets at own size and +20k (`benchmarks.length_bias`): 0.75 stays."""


DEFAULT = Ranking()

STEP_WEIGHT = DEFAULT.step_weight
"""The step clauses' weight when `router.steps` is on (chosen on dev halves)."""

PREVIOUS = Ranking(fusion="rrf", step_weight=0.0, named_server_bonus=0.0, companion_bonus=0.0)
"""The ranking before score fusion, steps, named servers and companions (RRF, k = 20)."""
