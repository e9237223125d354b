"""The embedding interface the retrieval core depends on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:  # numpy is slow to import; the serving path's start does without it
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = "npt.NDArray[np.float32]"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, so scoring is a dot product."""

    @property
    def model_id(self) -> str:
        """Stable identity of the model; part of the cache key."""
        ...

    @property
    def dim(self) -> int: ...

    def load(self) -> None:
        """Load the model now, if it is not loaded yet (blocking; a server calls it in a worker
        thread at start so the first query does not pay for it)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Shape (dim,)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Several queries in one batch (a request and its steps); shape (len(texts), dim)."""
        ...
