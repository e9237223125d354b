"""The base model's scores, which keep false negatives out of the training triplets.

BM25's look-alikes include tools that do just what the positive does under another name
(`math.gcd` beside `number_theory.gcd`, `get_weather` beside `weather.current`). Trained to
push those away from the query, the model learns whichever of two equivalents one data set
happened to mark gold, and loses on a set that marks the other. A negative from another
server than the positive's is kept only if the base model (all-MiniLM-L6-v2, the model being
fine-tuned) scores it clearly below the positive for that query: its cosine under `MARGIN`
times the positive's ("TopK-PercPos", Moreira et al., NV-Retriever, 2024). A sibling on the
positive's own server is kept however close: there, close tools are the distinctions a user
makes ("enable RLS" / "disable RLS"), which the base model often scores alike;
equivalents live on other servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.indexing import embed_texts
from router.embedding.loading import load_embedder

BASE = "all-MiniLM-L6-v2"
MARGIN = 0.95
"""A negative's base cosine must stay under this fraction of the positive's."""
_BATCH = 256


@lru_cache(maxsize=2)
def _embedder(model: str, directory: Path) -> Embedder:
    """One loaded model per process: each build of the data asks for the same one."""
    return load_embedder(model, directory)


class Teacher:
    """The base model's vectors for every tool text, and its query scores against them."""

    def __init__(
        self, texts: Sequence[str], model: str = BASE, cache_dir: Path | None = None
    ) -> None:
        directory = cache_dir or default_cache_dir()
        self._embedder = _embedder(model, directory)
        vectors, _ = embed_texts(texts, self._embedder, EmbeddingCache(directory))
        self.tools: npt.NDArray[np.float32] = vectors

    def queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The queries' vectors, one row each (the tools' rows are scored against these)."""
        rows = [
            self._embedder.embed_queries(list(texts[start : start + _BATCH]))
            for start in range(0, len(texts), _BATCH)
        ]
        return np.concatenate(rows) if rows else np.zeros((0, self.tools.shape[1]), np.float32)
