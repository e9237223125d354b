"""The one place that turns a model name into an embedder of the right backend.

Only the chosen backend's module is imported, and only when the model loads (`load()` or
first use, in a worker thread), so the default (onnx) path never imports torch, and a server
answers `initialize` before numpy and onnxruntime are even imported.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from router.embedding.base import Embedder, Vectors
from router.embedding.manifest import ModelSpec, resolve_model


def load_embedder(model: str | None, cache_dir: Path | None = None) -> Embedder:
    """An embedder for a manifest id or a local model directory; nothing is imported or
    loaded until its `load()` or first use. `cache_dir` (default: the embedding cache's)
    keeps what a backend prepares from the model once (the onnx backend's int8 rewrite).

    Raises:
        EmbeddingError: The name is neither a known model nor a model directory.
    """
    return DeferredEmbedder(resolve_model(model), cache_dir)


def backend_embedder(spec: ModelSpec, cache_dir: Path | None = None) -> Embedder:
    """The backend's embedder for `spec` (imports the backend's module)."""
    if spec.backend == "onnx":
        from router.embedding.cache import default_cache_dir
        from router.embedding.onnx import OnnxEmbedder

        return OnnxEmbedder(spec, cache_dir or default_cache_dir())
    from router.embedding.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec)


class DeferredEmbedder:
    """An `Embedder` whose backend module is imported when the model is first needed."""

    def __init__(self, spec: ModelSpec, cache_dir: Path | None = None) -> None:
        self.spec = spec
        self._cache_dir = cache_dir
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def backend(self) -> Embedder:
        with self._lock:
            if self._inner is None:
                self._inner = backend_embedder(self.spec, self._cache_dir)
            return self._inner

    @property
    def model_id(self) -> str:
        return self.spec.cache_key

    @property
    def dim(self) -> int:
        return self.spec.dimension if self.spec.dimension is not None else self.backend.dim

    def load(self) -> None:
        self.backend.load()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.backend.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.backend.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.backend.embed_queries(texts)
