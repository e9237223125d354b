"""Shared by the commands that rank tools: loading a catalog file and building its index."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from router.cli.progress import progress_callback
from router.core.catalog import Catalog
from router.embedding.manifest import DEFAULT_MODEL
from router.evaluation.dataset import OnError, load_catalog
from router.retrieval.types import SearchMode

if TYPE_CHECKING:  # numpy and bm25s load when an index is built, not with the CLI
    from router.embedding.indexing import EmbeddingStats
    from router.retrieval.retriever import Retriever

logger = logging.getLogger(__name__)


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", type=Path, required=True, help="catalog.jsonl file")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model id or local directory")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="embedding cache (default: ~/.cache/mcp-router)",
    )
    parser.add_argument("--no-cache", action="store_true", help="embed everything, store nothing")
    parser.add_argument(
        "--on-error",
        choices=[e.value for e in OnError],
        default=OnError.SKIP.value,
        help="a malformed line: report it and go on (skip) or stop",
    )


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    catalog: Catalog
    retriever: Retriever
    stats: EmbeddingStats
    build_seconds: float
    skipped_lines: int
    model_id: str | None


def read_catalog(path: Path, on_error: OnError) -> tuple[Catalog, int]:
    catalog, problems = load_catalog(path, on_error)
    for problem in problems:
        logger.warning("skipped %s", problem)
    for collision in catalog.collisions:
        assigned = ", ".join(f"{s}/{t} -> {q}" for s, t, q in collision.members)
        logger.warning("tool names collide as %s: %s", collision.sanitised, assigned)
    return catalog, len(problems)


def build_index(args: argparse.Namespace, modes: list[SearchMode]) -> BuiltIndex:
    from router.embedding.cache import EmbeddingCache, default_cache_dir
    from router.embedding.loading import load_embedder
    from router.retrieval.retriever import Retriever

    catalog, skipped = read_catalog(args.catalog, OnError(args.on_error))
    needs_model = any(mode is not SearchMode.BM25 for mode in modes)
    embedder = load_embedder(args.model, args.cache_dir) if needs_model else None
    cache = None if args.no_cache else EmbeddingCache(args.cache_dir or default_cache_dir())
    started = time.perf_counter()
    with progress_callback("embedding tools") as on_progress:
        retriever, stats = Retriever.build(catalog, embedder, cache, on_progress=on_progress)
    seconds = time.perf_counter() - started
    if embedder is not None:
        print(
            f"index: {stats.total} tools, {stats.embedded} embedded, "
            f"{stats.from_cache} from cache ({seconds:.1f} s, model {embedder.model_id})",
            file=sys.stderr,
        )
    return BuiltIndex(
        catalog=catalog,
        retriever=retriever,
        stats=stats,
        build_seconds=seconds,
        skipped_lines=skipped,
        model_id=embedder.model_id if embedder else None,
    )
