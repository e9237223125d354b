"""Lexical retrieval: BM25 (bm25s) over stemmed words, identifiers split into words."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import Stemmer

from router.core.catalog import split_identifier
from router.vectors.dense import Ranking, top_n


def _bm25s_without_scipy() -> Any:
    """bm25s, imported so that it does not load scipy.

    bm25s imports scipy.sparse whenever it is installed (sentence-transformers brings it),
    only to offer a matrix builder the router does not use: its numpy builder gives the same
    scores, bit for bit, and scipy, which nothing else in the router calls, would stay resident
    in every long-lived router. A `None` in `sys.modules` makes just that import fail; it is
    taken out again at once, so anything else may still import scipy.
    """
    if "scipy" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        import bm25s
    finally:
        if "scipy" in sys.modules and sys.modules["scipy"] is None:
            del sys.modules["scipy"]
    return bm25s


bm25s = _bm25s_without_scipy()
STOPWORDS_EN = bm25s.stopwords.STOPWORDS_EN

_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern
_STOPWORDS = frozenset(STOPWORDS_EN)
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_\-.][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*")


def normalise(text: str) -> str:
    """Split `snake_case`, `kebab-case`, `dotted.names` and `camelCase` into words."""
    return _IDENTIFIER.sub(lambda m: " ".join([m.group(0), split_identifier(m.group(0))]), text)


BM25_B = 0.75
"""BM25's field-length normalisation (Lucene's, bm25s's default): 0 leaves a long text's
term counts as they are, 1 divides them fully by its length relative to the mean. 0.9 and
1 gained nothing on the dev halves of the people's sets and public sets
(`benchmarks.length_bias`)."""


class LexicalIndex:
    """BM25 over the tools' search texts, English stop words removed, Snowball-stemmed;
    `b` is the field-length normalisation (`BM25_B`)."""

    def __init__(self, texts: Sequence[str], b: float = BM25_B) -> None:
        self._stemmer: Any = Stemmer.Stemmer("english")
        self._size = len(texts)
        self._bm25: Any = bm25s.BM25(b=b, csc_backend="numpy")
        if texts:
            tokens = bm25s.tokenize(
                [normalise(t) for t in texts],
                stopwords="en",
                stemmer=self._stemmer,
                show_progress=False,
            )
            self._bm25.index(tokens, show_progress=False)
            self._vocab: dict[str, int] = dict(self._bm25.vocab_dict)
        else:
            self._vocab = {}

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        if self._size == 0:
            return np.zeros(0, dtype=np.float32)
        known = [t for t in self._query_tokens(query) if t in self._vocab]
        if not known:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(known), dtype=np.float32)

    def _query_tokens(self, query: str) -> list[str]:
        """The same steps as `bm25s.tokenize` (lowercase, its word pattern, English stop
        words, stemming) without its per-call progress-bar setup, which a query, tokenised on
        every search, should not pay for."""
        words = [w for w in _WORD.findall(normalise(query).lower()) if w not in _STOPWORDS]
        stemmed: list[str] = self._stemmer.stemWords(words)
        return stemmed

    def search(self, query: str, n: int) -> Ranking:
        scores = self.scores(query)
        positive = int(np.count_nonzero(scores > 0))
        return top_n(scores, min(n, positive))


def matched_top(scores: npt.NDArray[np.float32], depth: int) -> npt.NDArray[np.intp]:
    """The best `depth` tools BM25 matched at all (a zero score matched no query word)."""
    return top_n(scores, min(depth, int(np.count_nonzero(scores > 0))))[0]
