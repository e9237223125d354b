"""Token savings: the routed lists against the full list, per k, per token budget, per format.

Counts are cl100k (`TokenCounter`) of the list as a host sends it, counted exactly with
`ListTokens` (each tool encoded once per format); `exact_check` in the JSON compares them
with encoding the whole serialised list, on each set's own catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.suite.listtokens import ListTokens
from router.accounting.formats import ToolFormat
from router.accounting.tokens import TokenCounter
from router.core.catalog import ToolRecord
from router.core.meta_tools import meta_tool_records
from router.evaluation.metrics import ResolvedQuery

K_VALUES = (1, 3, 5, 10)
BUDGETS = (500, 1000, 2000, 4000)
FORMATS = tuple(f.value for f in ToolFormat)


def list_tokens(lists: ListTokens, tools: Sequence[ToolRecord], fmt: str) -> int:
    return lists.count(tools, fmt)


def meta_tools_cost(counter: TokenCounter, default_k: int = 5) -> dict[str, Any]:
    """The router's fixed listing: `search_tools` and `call_tool`, exactly as served."""
    meta = meta_tool_records(default_k)
    return {
        "names": [m.qualified_name for m in meta],
        "tokens": {fmt: counter.count_tools(meta, fmt) for fmt in FORMATS},
    }


def full_tokens(lists: ListTokens, records: Sequence[ToolRecord]) -> dict[str, int]:
    return {fmt: list_tokens(lists, records, fmt) for fmt in FORMATS}


def _saved(listed: float, full: int) -> float:
    return round(100.0 * (1 - listed / full), 2) if full else 0.0


def _distribution(values: Sequence[int], full: int, meta: int) -> dict[str, Any]:
    array = np.asarray(values, dtype=np.float64)
    mean = float(array.mean()) if len(array) else 0.0

    def pct(q: float) -> float:
        return round(float(np.percentile(array, q)), 1) if len(array) else 0.0

    return {
        "mean": round(mean, 1),
        "p10": pct(10),
        "p50": pct(50),
        "p90": pct(90),
        "p99": pct(99),
        "min": int(array.min()) if len(array) else 0,
        "max": int(array.max()) if len(array) else 0,
        "saved_percent": _saved(mean, full),
        "with_meta_mean": round(mean + meta, 1),
        "with_meta_saved_percent": _saved(mean + meta, full),
        "worst_query_saved_percent": _saved(float(array.max()) + meta, full) if len(array) else 0,
    }


def routed_tokens(
    lists: ListTokens,
    records: Sequence[ToolRecord],
    rankings: Sequence[Sequence[int]],
    full: dict[str, int],
    meta: dict[str, int],
) -> dict[str, Any]:
    """Per k and format: the distribution over queries of the routed top-k list's tokens."""
    out: dict[str, Any] = {}
    for k in K_VALUES:
        out[str(k)] = {
            fmt: _distribution(
                [list_tokens(lists, [records[p] for p in r[:k]], fmt) for r in rankings],
                full[fmt],
                meta[fmt],
            )
            for fmt in FORMATS
        }
    return out


def budget_lists(
    lists: ListTokens,
    records: Sequence[ToolRecord],
    rankings: Sequence[Sequence[int]],
    queries: Sequence[ResolvedQuery],
    full_mcp: int,
) -> dict[str, Any]:
    """`--budget N` as `route` selects: the best-ranked prefix whose tools' MCP entries fit
    N tokens; what the list costs (exactly, wrapper included) and which groups it hits."""
    counter = lists.counter
    out: dict[str, Any] = {}
    for budget in BUDGETS:
        sizes, spent, recall, all_hit = [], [], [], []
        for ranking, item in zip(rankings, queries, strict=True):
            chosen, used = [], 0
            for position in ranking:
                cost = counter.count_tool(records[position], ToolFormat.MCP)
                if used + cost > budget:
                    break
                used += cost
                chosen.append(position)
            listed = set(chosen)
            hits = sum(1 for group in item.groups if group & listed)
            sizes.append(len(chosen))
            spent.append(list_tokens(lists, [records[p] for p in chosen], "mcp"))
            recall.append(hits / len(item.groups))
            all_hit.append(1.0 if hits == len(item.groups) else 0.0)
        mean_spent = float(np.mean(spent)) if spent else 0.0
        out[str(budget)] = {
            "tools_mean": round(float(np.mean(sizes)), 2) if sizes else 0.0,
            "tokens_mean": round(mean_spent, 1),
            "saved_percent": _saved(mean_spent, full_mcp),
            "recall": round(float(np.mean(recall)), 4) if recall else 0.0,
            "all_hit": round(float(np.mean(all_hit)), 4) if all_hit else 0.0,
        }
    return out


def exact_check(
    lists: ListTokens, records: Sequence[ToolRecord], rankings: Sequence[Sequence[int]]
) -> dict[str, dict[str, int]]:
    """Per format, the largest difference between `ListTokens` and encoding the whole
    serialised list, over the full list and the first 20 queries' top 10 (0 when exact)."""
    counter = lists.counter
    routed = [[records[p] for p in r[:10]] for r in rankings[:20]]
    out: dict[str, dict[str, int]] = {}
    for fmt in FORMATS:
        out[fmt] = {
            "full_list": lists.count(records, fmt) - counter.count_tools(records, fmt),
            "routed_max": max(
                (abs(lists.count(t, fmt) - counter.count_tools(t, fmt)) for t in routed),
                default=0,
            ),
        }
    return out
