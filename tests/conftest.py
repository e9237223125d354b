"""Shared fixtures: the example catalog, the real model (loaded once), temp caches."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from router.core.catalog import Catalog, ToolSpec
from router.embedding.base import Embedder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CATALOG = ROOT / "examples" / "catalog.jsonl"
SHARED_DATA = ROOT.parent / "shared" / "data"

# Bytecode is written: the suite starts hundreds of Python processes (routers, upstreams, the
# conformance clients), and where the machine sets PYTHONDONTWRITEBYTECODE (CI's does) with
# the venvs installed `--no-compile`, each of them compiled every module it imported from
# source, every time: 3.5 s of CPU to import the router against 1.3 s from the cache. The
# first process that imports a module now writes its .pyc; the others read it. This process
# and its workers too, from here on.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

pytest_plugins = [
    "tests.support.timings",  # MCP_ROUTER_TEST_TIMINGS=PATH: where the time goes
    "tests.support.no_processes",  # MCP_ROUTER_NO_PROCESSES=1: `make check`'s tests start none
]


TORCH_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The base model's fp32 weights on the sentence-transformers backend (the `st` extra)."""
BASE_MODEL = "all-MiniLM-L6-v2"
"""The base model as the router runs it (int8 ONNX): the reference of the parity tests."""


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The default model (onnxruntime), loaded once per test session."""
    from router.embedding.loading import load_embedder

    return load_embedder(None)


@pytest.fixture(scope="session")
def base_embedder() -> Embedder:
    """The base model (onnxruntime), which `torch_embedder` runs in fp32."""
    from router.embedding.loading import load_embedder

    return load_embedder(BASE_MODEL)


@pytest.fixture(scope="session")
def torch_embedder() -> Embedder:
    """The same model on PyTorch, loaded once per test session (it takes seconds)."""
    from router.embedding.loading import load_embedder

    pytest.importorskip("sentence_transformers", reason="the st extra is not installed")
    return load_embedder(TORCH_MODEL)


def make_catalog(*tools: tuple[str, str, str]) -> Catalog:
    """A catalog from `(server, name, description)` triples."""
    return Catalog.from_specs(
        ToolSpec(server=s, name=n, description=d, input_schema=None) for s, n, d in tools
    )
