"""A small deterministic embedder for unit tests: hashed word and character n-gram features.

It has no model weights and no semantic knowledge; it exists so that tests of the cache,
the index and fusion run in milliseconds. Production always uses a real model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from router.embedding.base import Vectors

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Feature-hashing embedder (words and character trigrams into `dim` buckets)."""

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim
        self.documents_embedded = 0

    @property
    def model_id(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def load(self) -> None:
        """Nothing to load."""

    def _vector(self, text: str) -> Vectors:
        vector = np.zeros(self._dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            features = [word] + [word[i : i + 3] for i in range(max(len(word) - 2, 0))]
            for feature in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dim
                sign = 1.0 if digest[4] & 1 else -1.0
                vector[bucket] += sign
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.documents_embedded += len(texts)
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self._vector(text)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self._vector(t) for t in texts])
