"""Embeddings: the `Embedder` protocol, the model manifest and the on-disk vector cache.

Importing this package never imports torch or sentence_transformers; only
`router.embedding.sentence` does, and only when a model is loaded.
"""

from router.embedding.base import Embedder

__all__ = ["Embedder"]
