"""The whole run: every set at its own size and mixed into each distractor count, the cold
build, live mode; one JSON report (schema in `benchmarks.suite.report`)."""

from __future__ import annotations

import gc
import logging
import random
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.suite import catalogs, data, tokens
from benchmarks.suite.catalogs import Context
from benchmarks.suite.fastmcp_peer import availability
from benchmarks.suite.listtokens import ListTokens
from benchmarks.suite.methods import embed_queries
from benchmarks.suite.options import Options
from router.accounting.tokens import TokenCounter
from router.cli.progress import stderr_progress
from router.core.catalog import Catalog
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.retrieval.retriever import Retriever

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def make_embedder(options: Options) -> Embedder | None:
    """The model asked for, or the hashing embedder for smoke runs."""
    if options.model is None:
        from router.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    from router.embedding.loading import load_embedder

    return load_embedder(options.model)


def run(options: Options) -> dict[str, Any]:
    from benchmarks.suite.report import assemble, code_state

    code = code_state()  # before anything runs: a commit made meanwhile is not measured
    started = time.perf_counter()
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets DEBUG on import
    embedder = make_embedder(options)
    # the hashing embedder costs nothing: keep its vectors out of the shared cache
    use_cache = options.model is not None and not options.no_cache
    cache = EmbeddingCache(options.cache_dir or default_cache_dir()) if use_cache else None
    counter = TokenCounter()
    version, skipped = availability() if options.fastmcp else (None, "disabled by --no-fastmcp")
    meta = tokens.meta_tools_cost(counter)
    lists = ListTokens(counter)
    ctx = Context(
        embedder,
        cache,
        lists,
        meta["tokens"],
        version is not None,
        options.seed,
        min(options.latency_queries, 20),
    )
    sets = [
        data.load_set(
            options.data,
            name,
            max_queries=options.max_queries,
            scale_queries=options.scale_queries,
            seed=options.seed,
            catalog_limit=options.catalog_limit,
            split=options.split,
        )
        for name in options.sets
    ]
    pool = data.load_pool(options.data) if sets and options.sizes else []
    work = sum(2 * len(s.sample) + len(s.scale_sample) * len(options.sizes) for s in sets)
    # One bar for the whole run on stderr (stdout carries only the table).
    with stderr_progress(disable=not options.progress) as progress:
        bar = Bar(progress, progress.add_task("", total=work))
        results = [_run_set(s, pool, options, ctx, bar) for s in sets]
        bar.stage("cold index build")
        cold = cold_build(pool, options, embedder) if pool else None
        live = None
        if options.config is not None:
            from benchmarks.suite.live import run_live

            bar.stage("live upstreams")
            live = run_live(options.config, options.live_wait, embedder, cache, counter, meta)
        progress.update(bar.task, completed=work)
    return assemble(
        options=options,
        code=code,
        model=embedder.model_id if embedder else None,
        fastmcp=(version, skipped),
        meta=meta,
        sets=results,
        cold=cold,
        live=live,
        wall_seconds=time.perf_counter() - started,
    )


class Bar:
    """The run's one task in a rich `Progress`: `stage` names the step running, `advance`
    counts the queries done."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self.progress = progress
        self.task = task
        self.advance = partial(progress.advance, task)

    def stage(self, name: str) -> None:
        self.progress.update(self.task, description=name)
        if not (self.progress.disable or self.progress.console.is_terminal):
            # Off a terminal rich draws the bar only when it stops: a line per step
            # tells a log where the run is.
            task = self.progress.tasks[0]
            line = f"{name} ({task.completed:.0f}/{task.total:.0f})"
            self.progress.console.print(line, markup=False, highlight=False)


def _run_set(
    query_set: data.QuerySet,
    pool: list[data.PoolTool],
    options: Options,
    ctx: Context,
    bar: Bar,
) -> dict[str, Any]:
    bar.stage(f"{query_set.name}: index")
    base = Catalog.from_specs(query_set.specs)
    retriever, cost = catalogs.build(base, ctx)
    bar.stage(f"{query_set.name}: embedding queries")
    texts = [q.text for q in query_set.sample]
    row_of = {q.id: i for i, q in enumerate(query_set.sample)}
    indices = [row_of[q.id] for q in query_set.scale_sample]
    timed = indices[: options.latency_queries]
    embedded = embed_queries(retriever, ctx.embedder, texts, timed, bar.advance)
    bar.stage(f"{query_set.name}: queries")
    measured = catalogs.measure(
        base,
        retriever,
        cost,
        query_set.sample,
        range(len(texts)),
        embedded,
        ctx,
        bar.advance,
        subset=indices,
    )
    rankings = measured.pop("_rankings")
    measured["exact_check"] = tokens.exact_check(ctx.lists, base.records, rankings)
    del retriever
    dropped = data.copies_of(pool, query_set) if pool else frozenset()
    order = data.distractor_order(pool, dropped, options.seed) if pool else []
    scaled = []
    for size in options.sizes:
        bar.stage(f"{query_set.name} +{size}: index")
        catalog = Catalog.from_specs(data.scaled_specs(query_set, order, size))
        retriever, cost = catalogs.build(catalog, ctx)
        bar.stage(f"{query_set.name} +{size}: queries")
        result = catalogs.measure(
            catalog, retriever, cost, query_set.scale_sample, indices, embedded, ctx, bar.advance
        )
        result.pop("_rankings")
        scaled.append({"distractors": size, "distractors_used": min(size, len(order)), **result})
        del retriever, catalog
        gc.collect()
    return {
        "name": query_set.name,
        "catalog_path": str(options.data / query_set.name / "catalog.jsonl"),
        "queries_in_file": len(query_set.queries),
        "sample": len(query_set.sample),
        "scale_sample": len(query_set.scale_sample),
        "pool": {"servers_dropped": len(dropped), "tools_available": len(order)},
        "base": measured,
        "scaled": scaled,
    }


def cold_build(
    pool: list[data.PoolTool], options: Options, embedder: Embedder | None
) -> dict[str, Any] | None:
    """Index `cold_tools` pool tools with an empty cache, then again from that cache."""
    if embedder is None or options.cold_tools <= 0:
        return None
    chosen = random.Random(options.seed).sample(pool, min(options.cold_tools, len(pool)))
    catalog = Catalog.from_specs(t.spec for t in chosen)
    with tempfile.TemporaryDirectory() as scratch:
        cache = EmbeddingCache(Path(scratch))
        started = time.perf_counter()
        Retriever.build(catalog, embedder, cache)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        Retriever.build(catalog, embedder, cache)
        cached = time.perf_counter() - started
    return {
        "tools": len(catalog),
        "cold_seconds": round(cold, 3),
        "cached_seconds": round(cached, 3),
        "cold_tools_per_second": round(len(catalog) / cold, 1) if cold else None,
    }
