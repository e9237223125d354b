"""The targets each measurement of the router is held to, and whether the run met them.

A check whose measurement was skipped has `"pass": null`. The peers' figures (FastMCP's
proxy, the upstreams alone) are compared in the tables, not held to targets.
"""

from __future__ import annotations

from typing import Any

SEARCH_P50_MS = 8.0
SEARCH_P99_MS = 25.0
SEARCH_AT = 20000
EMBED_RATIO = 3.0
RSS_EXAMPLE_MB = 200.0
RSS_CATALOG_MB = 350.0
CALL_OVERHEAD_P50_MS = 1.0


def _check(what: str, measured: Any, op: str, limit: Any, unit: str = "") -> dict[str, Any]:
    if measured is None:
        passed = None
    elif op == "<=":
        passed = measured <= limit
    elif op == ">=":
        passed = measured >= limit
    else:
        passed = measured == limit
    return {
        "what": what,
        "measured": measured,
        "op": op,
        "limit": limit,
        "unit": unit,
        "pass": passed,
    }


def _startup(report: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for label, part in report.get("startup", {}).get("upstreams", {}).items():
        for name, entry in part["systems"].items():
            if name.startswith("router-"):
                what = f"start-up ({label}): {name}'s first search ranks {entry['expected']} first"
                found.append(_check(what, entry["correct"], "==", True))
    return found


def _search(report: dict[str, Any]) -> list[dict[str, Any]]:
    sizes = report.get("search", {}).get("sizes", [])
    at = next((s for s in sizes if s["size"] == SEARCH_AT), sizes[-1] if sizes else None)
    figures = at["methods"].get("router_onnx_hybrid") if at else None
    tools = at["tools"] if at else SEARCH_AT
    return [
        _check(
            f"search: ONNX hybrid p{p} at {tools} tools",
            figures[f"p{p}_ms"] if figures else None,
            "<=",
            limit,
            "ms",
        )
        for p, limit in ((50, SEARCH_P50_MS), (99, SEARCH_P99_MS))
    ]


def _embedding(report: dict[str, Any]) -> list[dict[str, Any]]:
    ratio = report.get("embedding", {}).get("onnx_over_torch")
    return [_check("embedding: ONNX documents/s over torch", ratio, ">=", EMBED_RATIO, "x")]


def _memory(report: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for run in report.get("memory", {}).get("runs", []):
        if run["system"] != "router-onnx":
            continue
        limit = RSS_CATALOG_MB if run["upstreams"].startswith("catalog") else RSS_EXAMPLE_MB
        where = f"RSS, router ONNX, {run['upstreams']} upstreams, {run['cache']} cache"
        found += [
            _check(f"{where}: every upstream indexed", run["complete"], "==", True),
            # The target is the RSS after indexing (issue 8); the peak, reached while a
            # listing is parsed and embedded, is recorded beside it, not held to the target.
            _check(f"{where}: steady", run["steady_mb"], "<=", limit, "MB"),
        ]
    return found


def _calls(report: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for tool, entry in report.get("calls", {}).get("targets", {}).items():
        for path in ("router", "router_call_tool"):
            overhead = entry["overhead_p50_ms"].get(path)
            what = f"call overhead p50: {tool} via {path} over direct"
            found.append(_check(what, overhead, "<=", CALL_OVERHEAD_P50_MS, "ms"))
    return found


def evaluate(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check, in the order the sections run."""
    return [
        *_startup(report),
        *_search(report),
        *_embedding(report),
        *_memory(report),
        *_calls(report),
    ]
