"""Markdown tables of a bench report; every figure is read from the report's JSON."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from benchmarks.suite.bootstrap import format_margin
from benchmarks.suite.methods import PREVIOUS_METHOD, method_order
from benchmarks.suite.tokens import BUDGETS, FORMATS, K_VALUES

LABELS = {
    "none": "none (all listed)",
    "random": "random",
    "bm25": "BM25 alone",
    "fastmcp_bm25": "FastMCP BM25",
    "dense": "dense alone",
    "hybrid": "**router (hybrid)**",
    PREVIOUS_METHOD: "previous router (RRF)",
}


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def label(method: str) -> str:
    return LABELS[method]


def _methods(point: dict[str, Any]) -> list[str]:
    return method_order([m for m in point["methods"] if m != "none"])


def _size(distractors: int) -> str:
    return (
        "own"
        if distractors == 0
        else f"+{distractors // 1000}k"
        if distractors >= 1000
        else (f"+{distractors}")
    )


def _points(s: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(0, s["base"]), *((p["distractors"], p) for p in s["scaled"])]


def scale_metric(point: dict[str, Any], method: str, metric: str) -> float:
    """A method's metric on the queries every catalog size of the set was run with."""
    entry = point["methods"][method]
    value: float = entry.get("scale_sample_metrics", entry["metrics"])[metric]
    return value


def run_line(report: dict[str, Any]) -> str:
    m = report["machine"]
    changes = report["uncommitted_changes"]
    code = f"code commit `{report['code_commit']}` (HEAD `{report['commit']}`)" + (
        f" plus uncommitted changes to {', '.join(changes)}" if changes else ""
    )
    fastmcp = report["fastmcp"]
    peer = (
        f"fastmcp {fastmcp['version']}"
        if fastmcp["version"]
        else f"no FastMCP ({fastmcp['skipped']})"
    )
    samples = ", ".join(
        f"{s['name']} {s['sample']} of {s['queries_in_file']:,} queries "
        f"({s['scale_sample']} at each distractor count)"
        for s in report["sets"]
    )
    return (
        f"{report['run'].capitalize()} run at {code}, finished {report['finished_at']}, in "
        f"{report['wall_seconds'] / 60:.1f} min on {m['processor']} Linux, {m['cpus']} CPU cores, "
        f"{m['memory_gb']} GB, Python {m['python']} (1-min load average at the end "
        f"{m['load_average_1m_at_end']}). Model `{report['model']}`, {peer}, tokens "
        f"`{report['encoding']}`, seed {report['settings']['seed']}."
        + (f" Queries: {samples}." if samples else "")
        + f" Query half: {report['settings'].get('split', 'all')}."
    )


def accuracy_table(report: dict[str, Any]) -> str:
    rows = []
    for s in report["sets"]:
        base = s["base"]
        for method in _methods(base):
            entry = base["methods"][method]
            mt, lat = entry["metrics"], entry["latency_ms"]
            rows.append(
                [s["name"], f"{base['tools']:,}", base["queries"], label(method)]
                + [f"{mt[k]:.3f}" for k in ("recall@1", "recall@5", "recall@10", "all_hit@5")]
                + [
                    f"{mt['ndcg@10']:.3f}",
                    f"{mt['mrr']:.3f}",
                    f"{entry['tokens_k5_mcp_mean']:,.0f}",
                ]
                + [f"{lat['p50']:.1f}", f"{lat['p99']:.1f}"]
            )
        rows.append(
            [s["name"], f"{base['tools']:,}", base["queries"], LABELS["none"]]
            + ["1 (all)"] * 4
            + ["-", "-", f"{base['full_tokens']['mcp']:,}", "-", "-"]
        )
    header = ["set", "tools", "queries", "method", "R@1", "R@5", "R@10", "all-hit@5"]
    header += ["nDCG@10", "MRR", "tokens@5", "p50 ms", "p99 ms"]
    return _table(header, rows)


def scale_table(report: dict[str, Any], metric: str = "recall@5") -> str:
    sizes = report["settings"]["distractors"]
    header = ["set", "method"] + [_size(0)] + [_size(n) for n in sizes]
    rows = []
    for s in report["sets"]:
        points = _points(s)
        rows.append([s["name"], "tools"] + [f"{p['tools']:,}" for _, p in points])
        for method in _methods(s["base"]):
            rows.append(
                [s["name"], label(method)]
                + [f"{scale_metric(p, method, metric):.3f}" for _, p in points]
            )
    return _table(header, rows)


def groups_table(report: dict[str, Any], groups: Sequence[str] = ("level=3", "level=4")) -> str:
    rows = []
    for s in report["sets"]:
        for distractors, point in _points(s):
            for group_name in groups:
                group = point["groups"].get(group_name)
                if not group:
                    continue
                for method in _methods(point):
                    mt = group["methods"][method]
                    rows.append(
                        [
                            s["name"],
                            _size(distractors),
                            group_name,
                            group["count"],
                            label(method),
                            f"{mt['recall@5']:.3f}",
                            f"{mt['all_hit@5']:.3f}",
                            f"{mt['recall@10']:.3f}",
                        ]
                    )
    if not rows:
        return ""
    return _table(
        ["set", "catalog", "group", "queries", "method", "R@5", "all-hit@5", "R@10"], rows
    )


def tokens_table(report: dict[str, Any]) -> str:
    meta = report["meta_tools"]["tokens"]
    rows = []
    for s in report["sets"]:
        base = s["base"]
        for fmt in FORMATS:
            per_k = base["tokens"]["k"]
            cells = [
                f"{per_k[str(k)][fmt]['with_meta_mean']:,.0f} "
                f"({per_k[str(k)][fmt]['with_meta_saved_percent']:.2f}%)"
                for k in K_VALUES
            ]
            k5 = per_k["5"][fmt]
            rows.append(
                [
                    s["name"],
                    fmt,
                    f"{base['full_tokens'][fmt]:,}",
                    meta[fmt],
                    *cells,
                    f"{k5['p50']:,.0f} / {k5['p90']:,.0f} / {k5['max']:,}",
                    f"{k5['worst_query_saved_percent']:.2f}%",
                ]
            )
    header = ["set", "format", "full list", "meta-tools"]
    header += [f"k={k} + meta (saved)" for k in K_VALUES]
    header += ["k=5 tools p50 / p90 / max", "worst query saved"]
    return _table(header, rows)


def budget_table(report: dict[str, Any]) -> str:
    rows = []
    for s in report["sets"]:
        budgets = s["base"]["tokens"]["budgets"]
        for budget in BUDGETS:
            b = budgets[str(budget)]
            rows.append(
                [
                    s["name"],
                    f"{budget:,}",
                    f"{b['tools_mean']:.1f}",
                    f"{b['tokens_mean']:,.0f}",
                    f"{b['saved_percent']:.2f}%",
                    f"{b['recall']:.3f}",
                    f"{b['all_hit']:.3f}",
                ]
            )
    header = ["set", "budget (mcp tokens)", "tools listed", "tokens", "saved", "Recall", "all-hit"]
    return _table(header, rows)


def growth_table(report: dict[str, Any]) -> str:
    rows = []
    for s in report["sets"]:
        for distractors, point in _points(s):
            k5 = point["tokens"]["k"]["5"]["mcp"]
            rows.append(
                [
                    s["name"],
                    _size(distractors),
                    f"{point['tools']:,}",
                    f"{point['full_tokens']['mcp']:,}",
                    f"{k5['with_meta_mean']:,.0f}",
                    f"{k5['with_meta_saved_percent']:.2f}%",
                ]
            )
    header = ["set", "catalog", "tools", "full list (mcp)", "k=5 + meta", "saved"]
    return _table(header, rows)


def _latency(methods: dict[str, Any], name: str) -> str:
    if name not in methods:
        return "-"
    latency = methods[name]["latency_ms"]
    return f"{latency['p50']:.1f} / {latency['p99']:.1f}"


def _p50(cost: dict[str, Any], key: str, digits: int) -> str:
    return f"{cost[key]['p50']:.{digits}f}" if key in cost else "-"


def cost_table(report: dict[str, Any]) -> str:
    rows = []
    for s in report["sets"]:
        for distractors, point in _points(s):
            c, m = point["cost"], point["methods"]
            ratio = c.get("dense_to_embed_ratio_p50")
            rows.append(
                [
                    s["name"],
                    _size(distractors),
                    f"{point['tools']:,}",
                    f"{c['build_seconds']:.1f}",
                    _latency(m, "hybrid"),
                    _latency(m, "bm25"),
                    _latency(m, "fastmcp_bm25"),
                    _p50(c, "embed_query_ms", 1),
                    _p50(c, "dense_search_ms", 2),
                    "-" if ratio is None else f"{ratio:.3f}",
                    f"{c['peak_rss_mb']:,.0f}",
                ]
            )
    header = ["set", "catalog", "tools", "index build, cached (s)", "router p50 / p99 ms"]
    header += ["BM25 p50 / p99", "FastMCP p50 / p99", "embed query p50 ms"]
    header += ["dense search p50 ms", "dense / embed", "peak RSS MB"]
    return _table(header, rows)


def cold_line(report: dict[str, Any]) -> str:
    cold = report["cold_build"]
    if not cold:
        return "No cold build was timed (hashing embedder or `--cold-tools 0`)."
    return (
        f"Cold index build: {cold['tools']} pool tools with an empty embedding cache took "
        f"{cold['cold_seconds']:.1f} s ({cold['cold_tools_per_second']:.1f} tools/s, nearly all "
        f"of it embedding); the same tools from the cache took {cold['cached_seconds']:.2f} s."
    )


def live_table(report: dict[str, Any]) -> str:
    live = report["live"]
    if not live:
        return "Live mode did not run (`--config FILE`)."
    totals = live["totals"]
    rows = [
        [u["name"], u["state"], u["tools"], _count(u["tokens_mcp"]), _count(u["direct_tokens_mcp"])]
        for u in live["upstreams"]
    ]
    rows.append(
        [
            "**total**",
            "",
            totals["tools"],
            _count(totals["tokens"]["mcp"]),
            _count(totals["direct_tokens_mcp"]),
        ]
    )
    header = ["server", "state", "tools", "tokens (router's form, mcp)", "own tools/list (mcp)"]
    default = live["default_listing"]["tokens"]
    listings = [
        ["everything listed", *(_count(totals["tokens"][f]) for f in FORMATS)],
        ["router default (meta-tools + pins)", *(_count(default[f]) for f in FORMATS)],
    ]
    for k, per_format in live["routed"].items():
        listings.append(
            [f"routed k={k} + meta, mean of {len(live['queries'])} tasks"]
            + [
                f"{per_format[f]['mean']:,.0f} ({per_format[f]['saved_percent']:.1f}%)"
                for f in FORMATS
            ]
        )
    return "\n\n".join(
        (_table(header, rows), _table(["listing", *FORMATS], listings), LIVE_COLUMNS)
    )


LIVE_COLUMNS = (
    'Both token columns count the same tools with the same encoding. "Router\'s form" is the '
    "entries the router lists (qualified `server__tool` names, the fields it relays): a row is "
    "one server's tools in one list, and the total is every tool in one list (less than the sum "
    "of the rows by the list wrappers: one instead of one per server). That total is the "
    '"everything listed" row, which the "saved" percentages are taken against. "Own '
    "tools/list\" is each server's `tools/list` result as it sent it (fields the router does not "
    "relay included), and its total is their sum: what a host connected to the servers directly "
    "receives. `benchmarks/listing_tokens.py` measures the steps from one total to the other."
)
"""Under the live tables: what the two totals of every tool hold."""


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _interval(margin: dict[str, float] | None) -> str:
    return "-" if margin is None else format_margin(margin)


MARGINS = ("vs_bm25", "vs_dense", "vs_fastmcp_bm25", "vs_hybrid_previous")
"""The baselines whose Recall@5 margin the acceptance table shows, with its 95% interval."""


def acceptance_table(report: dict[str, Any]) -> str:
    acc = report["acceptance"]
    rows = []
    for c in acc["checks"]:
        recall, margin = c["recall@5"], c["recall@5_margin"]
        rows.append(
            [c["set"], _size(c["distractors"]), f"{c['tools']:,}"]
            + [f"{min(c['saved_percent_k5_with_meta'].values()):.2f}%"]
            + [f"{recall.get('hybrid', float('nan')):.3f}"]
            + [_interval(margin.get(m)) for m in MARGINS]
            + ["yes" if c["pass"] else "**no**"]
        )
    header = ["set", "catalog", "tools", "k=5 saved (worst format)", "router R@5"]
    header += ["vs BM25", "vs dense", "vs FastMCP", "vs previous router", "pass"]
    verdict = "every check passes" if acc["pass"] else "**some checks fail**"
    note = (
        "Margins are the router's Recall@5 minus the other method's on the same queries, "
        "with a 95% paired-bootstrap interval (2,000 resamples of the queries)."
    )
    return _table(header, rows) + f"\n\n{note}\n\nAcceptance: {verdict}."
