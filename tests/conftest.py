"""Shared fixtures: the example catalog, the real model (loaded once), temp caches."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.catalog import Catalog, ToolSpec
from router.embedding.base import Embedder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CATALOG = ROOT / "examples" / "catalog.jsonl"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The default model, loaded once per test session (it takes seconds)."""
    from router.embedding.manifest import resolve_model
    from router.embedding.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(resolve_model(None))


def make_catalog(*tools: tuple[str, str, str]) -> Catalog:
    """A catalog from `(server, name, description)` triples."""
    return Catalog.from_specs(
        ToolSpec(server=s, name=n, description=d, input_schema=None) for s, n, d in tools
    )
