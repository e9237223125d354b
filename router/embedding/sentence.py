"""The sentence-transformers embedder (the optional `st` extra): the only module that imports
torch. The default backend is onnxruntime (`router.embedding.onnx`); this one runs any other
sentence-transformers model, from a local directory or a manifest entry.

The model is loaded from disk only (offline flags, `local_files_only`); a missing model is
an `EmbeddingError` that says what to install.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from router.core.errors import EmbeddingError
from router.embedding.base import Vectors
from router.embedding.manifest import ModelSpec, locate

logger = logging.getLogger(__name__)

_OFFLINE_FLAGS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def model_directory(spec: ModelSpec) -> Path:
    """The local directory holding the model's weights."""
    path = locate(spec.source, spec)
    if not any((path / marker).is_file() for marker in ("modules.json", "config.json")):
        raise EmbeddingError(
            f"model {spec.id!r}: {path} holds no sentence-transformers model "
            "(no modules.json or config.json)"
        )
    return path


class SentenceTransformerEmbedder:
    """Embeds with a local sentence-transformers model; load once, reuse from any thread."""

    def __init__(self, spec: ModelSpec, batch_size: int = 32) -> None:
        self._spec = spec
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._spec.cache_key

    @property
    def dim(self) -> int:
        if self._spec.dimension is not None and self._model is None:
            return self._spec.dimension
        return _dimension(self._load())

    def load(self) -> None:
        """Load the model now (blocking; idempotent)."""
        self._load()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._build()
            return self._model

    def _build(self) -> Any:
        path = model_directory(self._spec)
        for name, value in _OFFLINE_FLAGS.items():
            os.environ.setdefault(name, value)
        try:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
        except ImportError as exc:
            raise EmbeddingError(
                f"model {self._spec.id!r} runs on sentence-transformers, which is not "
                "installed: pip install torch==2.13.0 'mcp-router[st]'"
            ) from exc
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        torch.set_num_threads(_torch_threads())
        logger.info("loading embedding model %s from %s", self._spec.id, path)
        try:
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # any loader failure is a broken model directory
            raise EmbeddingError(f"cannot load model {self._spec.id!r} from {path}: {exc}") from exc
        if self._spec.max_seq_length:
            model.max_seq_length = self._spec.max_seq_length
        loaded_dim = _dimension(model)
        if self._spec.dimension is not None and loaded_dim != self._spec.dimension:
            raise EmbeddingError(
                f"model {self._spec.id!r} has dimension {loaded_dim}, "
                f"the manifest says {self._spec.dimension}"
            )
        return model

    def _encode(self, texts: Sequence[str], prompt: str) -> Vectors:
        model = self._load()
        vectors = model.encode(
            list(texts),
            prompt=prompt or None,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts, self._spec.document_prompt)

    def embed_query(self, text: str) -> Vectors:
        vectors: Vectors = self._encode([text], self._spec.query_prompt)[0]
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, self._spec.query_prompt)


def _torch_threads() -> int:
    """One intra-op thread unless `MCP_ROUTER_TORCH_THREADS` says otherwise.

    On a small machine with other work running, torch's spin-waiting intra-op threads starve
    each other and the event loop: with its default of one thread per core a query took
    much longer than with one (no result file records that comparison). What one
    thread gives is in `benchmarks/results/perf.json`: `embedding.backends.torch` (query
    p50/p99, documents/s) and `search.sizes[*].methods.router_torch_hybrid`.
    """
    value = os.environ.get("MCP_ROUTER_TORCH_THREADS", "1")
    try:
        return max(1, int(value))
    except ValueError:
        raise EmbeddingError(f"MCP_ROUTER_TORCH_THREADS must be a number, got {value!r}") from None


def _dimension(model: Any) -> int:
    # sentence-transformers renamed the method in 5.x; older releases have only the old name.
    getter = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )
    return int(getter())
