"""The one place that turns a model name into an embedder of the right backend.

Only the chosen backend's module is imported, so the default (onnx) path never imports
torch or sentence_transformers.
"""

from __future__ import annotations

from router.embedding.base import Embedder
from router.embedding.manifest import resolve_model


def load_embedder(model: str | None) -> Embedder:
    """An embedder for a manifest id or a local model directory; nothing is loaded until
    its `load()` or first use.

    Raises:
        EmbeddingError: The name is neither a known model nor a model directory.
    """
    spec = resolve_model(model)
    if spec.backend == "onnx":
        from router.embedding.onnx import OnnxEmbedder

        return OnnxEmbedder(spec)
    from router.embedding.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec)
