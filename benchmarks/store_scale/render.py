"""The section of benchmarks/README.md written from `results/store_scale.json`, and the
switch-over point chosen from its figures.

The choice, made by `recommend` and shown with its reasons:
- `ef_search`: of the measured settings whose Recall@5 loss (hybrid, labelled queries,
  against the exact scan) stays within `TOLERANCE` at the upper end of its 95% interval at
  every measured size, the one whose hybrid search is fastest at the largest size (a setting
  below the 100 candidates fusion reads is not cheaper: the iterative scan goes on past it);
- the switch-over: where HNSW at that setting answers the whole hybrid search (p50, query
  embedding included) no slower than the exact scan. Between two measured sizes it is read
  off a straight line through the two sizes' differences (the exact scan's cost grows with
  the catalog, HNSW's barely), rounded to 10,000 tools. Memory and ready time are reported
  beside it but do not move it: a replica that answers slower to save memory is not a default.
"""

from __future__ import annotations

from typing import Any

START, END = "<!-- store-scale:start -->", "<!-- store-scale:end -->"
TOLERANCE = 0.01
"""Recall@5 an approximate index may lose: the tolerance of the ONNX-against-PyTorch check."""
ROUND_TO = 10_000


def _ms(figures: dict[str, float]) -> str:
    return f"{figures['p50']:.1f} / {figures['p99']:.1f}"


def _signed(value: float) -> str:
    return f"{value + 0.0:+.4f}"  # + 0.0: no "-0.0000"


def _hnsw_modes(point: dict[str, Any]) -> list[str]:
    return [name for name in point["search"] if name != "exact"]


def _p50(point: dict[str, Any], mode: str) -> float:
    return float(point["search"][mode]["hybrid_ms"]["p50"])


def _worst_loss(point: dict[str, Any], mode: str) -> float:
    """The upper end of the 95% interval of the Recall@5 lost (the margin is HNSW - exact)."""
    return -float(point["search"][mode]["recall@5_margin"]["low"])


def recommend(result: dict[str, Any]) -> dict[str, Any]:
    """The `ef_search` and the catalog size above which `auto` should use HNSW."""
    points = sorted(result["sizes"], key=lambda p: p["tools"])
    efs = sorted({int(name.removeprefix("hnsw-ef")) for p in points for name in _hnsw_modes(p)})
    good = [ef for ef in efs if all(_worst_loss(p, f"hnsw-ef{ef}") <= TOLERANCE for p in points)]
    # Among the settings within tolerance, the fastest hybrid search at the largest size: a
    # setting below the candidate depth is not cheaper (the iterative scan goes on past it).
    largest = points[-1]
    ef = min(good, key=lambda e: (_p50(largest, f"hnsw-ef{e}"), e)) if good else efs[-1]
    mode = f"hnsw-ef{ef}"
    gaps = [(int(p["tools"]), _p50(p, "exact") - _p50(p, mode)) for p in points]
    estimate: float | None = None
    switch: int | None = None
    for index, (tools, gap) in enumerate(gaps):
        if gap >= 0:
            if index == 0:
                estimate, switch = tools, tools
            else:
                before, before_gap = gaps[index - 1]
                estimate = before + (tools - before) * -before_gap / (gap - before_gap)
                rounded = round(estimate / ROUND_TO) * ROUND_TO
                switch = min(tools, max(before, rounded))
            break
    return {
        "ef_search": ef,
        "ef_search_within_tolerance": bool(good),
        "tolerance": TOLERANCE,
        "switch_over_tools": switch,
        "switch_over_estimate": None if estimate is None else round(estimate),
        "hybrid_p50_gap_ms": {str(t): round(g, 2) for t, g in gaps},
    }


def run_line(result: dict[str, Any]) -> str:
    machine, versions, settings = result["machine"], result["versions"], result["settings"]
    changes = result["uncommitted_changes"]
    code = f"code commit `{result['code_commit']}`" + (
        f" plus uncommitted changes to {', '.join(changes)}" if changes else ""
    )
    queries = ", ".join(f"{name} {count}" for name, count in result["queries"].items())
    return (
        f"Run `{result['command']}` at {code}, finished {result['finished_at']}, "
        f"{result['wall_seconds'] / 60:.1f} min on {machine['platform']}, {machine['cpus']} "
        f"CPUs, {machine['memory_gb']} GB (1-min load average {machine['load_average_1m_before']} "
        f"before, {machine['load_average_1m_at_end']} at the end). PostgreSQL "
        f"{versions['postgresql']} with pgvector {versions['pgvector']} on loopback "
        f"(shared_buffers {versions['shared_buffers']}, maintenance_work_mem "
        f"{versions['maintenance_work_mem']}), HNSW m = {settings['hnsw_m']}, "
        f"ef_construction = {settings['hnsw_ef_construction']}, iterative scan "
        f"`relaxed_order`. Model `{result['model']}`. Labelled queries ({settings['split']} half, "
        f"seed {settings['seed']}): {queries}; each mode answers every query, modes rotating "
        f"query by query, after {settings['warm_queries']} untimed."
    )


def search_table(result: dict[str, Any]) -> str:
    lines = [
        "| tools | dense search | dense step p50 / p99 ms | hybrid search p50 / p99 ms "
        "| dense top-5 / top-100 overlap | hybrid Recall@5 | lost (95% interval) "
        "| dense alone: Recall@5, lost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for point in result["sizes"]:
        for name, figures in point["search"].items():
            dense_alone = f"{figures['dense_recall@5']:.4f}"
            if name == "exact":
                label, overlap, lost = "exact (in process)", "(reference)", "(reference)"
            else:
                label = name.replace("hnsw-ef", "HNSW, ef_search ")
                overlap = f"{figures['overlap@5']:.3f} / {figures['overlap@100']:.3f}"
                margin = figures["recall@5_margin"]
                lost = (
                    f"{_signed(figures['recall@5_lost'])} "
                    f"({_signed(-margin['high'])} to {_signed(-margin['low'])})"
                )
                dense_alone += f", {_signed(figures['dense_recall@5_lost'])}"
            lines.append(
                f"| {point['tools']:,} | {label} | {_ms(figures['dense_ms'])} "
                f"| {_ms(figures['hybrid_ms'])} | {overlap} | {figures['recall@5']:.4f} "
                f"| {lost} | {dense_alone} |"
            )
    return "\n".join(lines)


_REPLICAS = {
    "exact": "exact: vectors read from PostgreSQL",
    "hnsw": "HNSW: no vectors read (fingerprints only)",
    "local": "local: vectors read from SQLite (today's default)",
}


def replica_table(result: dict[str, Any]) -> str:
    lines = [
        "| tools | replica | ready s (store + retriever) | RSS MiB | of which the index "
        "| peak MiB while indexing |",
        "|---|---|---|---|---|---|",
    ]
    for point in result["sizes"]:
        for mode, figures in point["replicas"].items():
            peak = "-" if figures["peak_mb"] is None else f"{figures['peak_mb']:.0f}"
            lines.append(
                f"| {point['tools']:,} | {_REPLICAS.get(mode, mode)} | {figures['ready_s']:.2f} "
                f"({figures['store_s']:.2f} + {figures['retriever_s']:.2f}) "
                f"| {figures['rss_mb']:.0f} | {figures['index_mb']:+.0f} | {peak} |"
            )
    return "\n".join(lines)


def store_table(result: dict[str, Any]) -> str:
    lines = [
        "| tools | of them copies | first fill s | exact: read into memory s | HNSW build s "
        "| on disk MiB: table / HNSW index |",
        "|---|---|---|---|---|---|",
    ]
    for point in result["sizes"]:
        store = point["store"]
        lines.append(
            f"| {point['tools']:,} | {point['copies']:,} | {store['fill_s']:.1f} "
            f"| {store['exact_load_s']:.1f} | {store['hnsw_build_s']:.1f} "
            f"| {store['table_mb']:.0f} / {store['hnsw_mb']:.0f} |"
        )
    return "\n".join(lines)


def recommendation_text(result: dict[str, Any]) -> str:
    choice = result["recommendation"]
    ef, tolerance = choice["ef_search"], choice["tolerance"]
    gaps = ", ".join(
        f"{int(tools):,} tools {gap:+.1f} ms" for tools, gap in choice["hybrid_p50_gap_ms"].items()
    )
    if choice["ef_search_within_tolerance"]:
        why_ef = (
            "the setting with the fastest hybrid search at the largest size, among those whose "
            f"Recall@5 loss stays within {tolerance} at the upper end of its 95% interval at "
            "every size"
        )
    else:
        why_ef = f"no measured setting stays within {tolerance} at every size; the largest"
    switch = choice["switch_over_tools"]
    if switch is None:
        verdict = (
            "HNSW was slower than the exact scan at every measured size: `auto` should stay "
            "exact up to the largest size measured"
        )
    else:
        verdict = (
            f"`auto` should use HNSW above **{switch:,} tools** "
            f"(`router.store.exact_max_tools`; the figures put the crossing at about "
            f"{choice['switch_over_estimate']:,}), at **ef_search {ef}**: from there HNSW "
            "answers the whole hybrid search no slower than the exact scan"
        )
    largest = max(result["sizes"], key=lambda p: p["tools"])
    replicas = largest["replicas"]
    saving = ""
    if {"exact", "hnsw"} <= set(replicas):
        exact, hnsw = replicas["exact"], replicas["hnsw"]
        saving = (
            f" At {largest['tools']:,} tools an HNSW replica also holds "
            f"{exact['rss_mb'] - hnsw['rss_mb']:.0f} MiB less and is ready "
            f"{exact['ready_s'] - hnsw['ready_s']:.1f} s sooner than an exact one."
        )
    mode = f"hnsw-ef{ef}"
    dense = max(result["sizes"], key=lambda p: p["search"][mode]["dense_recall@5_lost"])
    dense_note = (
        f" Dense alone (search mode `dense`) loses more, up to "
        f"{dense['search'][mode]['dense_recall@5_lost']:.4f} Recall@5 at ef_search {ef} "
        f"({dense['tools']:,} tools): the hybrid ranking keeps what BM25 also finds, whose "
        "cosine the store computes exactly."
    )
    return (
        f"**Switch-over**: {verdict}. ef_search {ef} is {why_ef}. Exact minus HNSW at ef_search "
        f"{ef}, hybrid p50: {gaps} (positive: HNSW faster).{saving}{dense_note}"
    )


def section(result: dict[str, Any]) -> str:
    parts = [
        run_line(result),
        "#### Search in one process (dense step: the best 100 alone; hybrid: "
        "`Retriever.search`, k = 10, with the query's embedding, BM25 and fusion)",
        search_table(result),
        "#### A new replica against the filled store (a fresh process per row)",
        replica_table(result),
        "#### The store, once per catalog (shared by every replica)",
        store_table(result),
        recommendation_text(result),
    ]
    return "\n\n".join(parts)
