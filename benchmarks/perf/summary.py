"""The short form of a perf report for docs/performance.md: one row per measurement, one
column per system, and the count of targets met (made from the JSON alone)."""

from __future__ import annotations

from typing import Any

from benchmarks.perf.render import run_line

_HEAD = [
    "measurement",
    "router, ONNX (default)",
    "router, torch",
    "FastMCP 4 proxy",
    "target (or floor)",
]


def _startup(report: dict[str, Any], label: str) -> list[str] | None:
    part = report.get("startup", {}).get("upstreams", {}).get(label)
    if part is None:
        return None
    found = part["systems"]

    def router(backend: str) -> str:
        warm, cold = found.get(f"router-{backend}-warm"), found.get(f"router-{backend}-cold")
        if warm is None or cold is None:
            return "-"
        wrong = "" if warm["correct"] and cold["correct"] else " (wrong tool first)"
        return f"{warm['search_s']:.2f} / {cold['search_s']:.2f}{wrong}"

    peer = found.get("fastmcp-proxy")
    fastmcp = "-"
    if peer is not None:
        fastmcp = f"{peer['search_s']:.2f}" + ("" if peer["correct"] else " (wrong tool first)")
    floor = found["direct"]["initialize_s"]
    servers = len(part["upstreams"])
    what = (
        f"start-up to the first search answer, {label} ({servers} server"
        f"{'s' if servers > 1 else ''}), warm / cold cache (s)"
    )
    return [what, router("onnx"), router("torch"), fastmcp, f"upstreams alone: {floor:.2f}"]


def _search(report: dict[str, Any]) -> list[str] | None:
    sizes = report.get("search", {}).get("sizes")
    if not sizes:
        return None
    size = sizes[-1]
    methods = size["methods"]

    def cell(key: str) -> str:
        m = methods.get(key)
        return f"{m['p50_ms']:.2f} / {m['p99_ms']:.2f}" if m else "-"

    what = f"search p50 / p99 at {size['tools']:,} tools (ms)"
    return [
        what,
        cell("router_onnx_hybrid"),
        cell("router_torch_hybrid"),
        cell("fastmcp_bm25") + " (BM25)",
        "ONNX <= 8 / <= 25",
    ]


def _embedding(report: dict[str, Any]) -> list[str] | None:
    part = report.get("embedding", {})
    backends = part.get("backends")
    if not backends:
        return None

    def cell(name: str) -> str:
        entry = backends.get(name)
        return f"{entry['docs_per_s']:,.1f}" if entry else "-"

    ratio = part.get("onnx_over_torch")
    onnx = cell("onnx") + (f" ({ratio:.2f}x torch)" if ratio is not None else "")
    return ["embedding, documents/s (no cache)", onnx, cell("torch"), "-", "ONNX >= 3x torch"]


def _memory_runs(report: dict[str, Any]) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = report.get("memory", {}).get("runs", [])
    return runs


def _rss(run: dict[str, Any] | None) -> str:
    return "-" if run is None else f"{run['steady_mb']:.0f} / {run['peak_mb']:.0f}"


def _memory(report: dict[str, Any]) -> list[list[str]]:
    runs = _memory_runs(report)
    rows = []
    labels = dict.fromkeys(r["upstreams"] for r in runs)
    for label in labels:
        here = [r for r in runs if r["upstreams"] == label]

        def cell(system: str, rows_: list[dict[str, Any]] = here) -> str:
            chosen = {r["cache"]: r for r in rows_ if r["system"] == system}
            if not chosen:
                return "-"
            if None in chosen:
                return _rss(chosen[None])
            return f"{_rss(chosen.get('warm'))} warm, {_rss(chosen.get('cold'))} cold"

        big = label.startswith("catalog")
        what = f"RSS steady / peak, {label} upstreams (MB)"
        target = "ONNX <= 350" if big else "ONNX <= 200"
        rows.append(
            [what, cell("router-onnx"), cell("router-torch"), cell("fastmcp-proxy"), target]
        )
    return rows


def _calls(report: dict[str, Any]) -> list[str] | None:
    targets = report.get("calls", {}).get("targets")
    if not targets:
        return None

    def cell(path: str) -> str:
        values = [t["overhead_p50_ms"].get(path) for t in targets.values()]
        return " / ".join("-" if v is None else f"{v:.2f}" for v in values)

    tools = " / ".join(t.split("__", 1)[1] for t in targets)
    what = f"call overhead p50 over direct (ms): {tools}, by name; via call_tool"
    router = f"{cell('router')}; {cell('router_call_tool')}"
    fastmcp = f"{cell('fastmcp')}; {cell('fastmcp_call_tool')}"
    return [what, router, "-", fastmcp, "router <= 1"]


def markdown(report: dict[str, Any]) -> str:
    rows = [
        _startup(report, "time"),
        _startup(report, "example"),
        _search(report),
        _embedding(report),
        *_memory(report),
        _calls(report),
    ]
    table = [row for row in rows if row is not None]
    lines = ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    checks = report["targets"]
    failed = [c["what"] for c in checks if c["pass"] is False]
    passed = sum(1 for c in checks if c["pass"])
    verdict = f"Router targets met: {passed} of {len(checks)}."
    if failed:
        verdict += " Not met: " + "; ".join(failed) + "."
    return "\n\n".join([run_line(report), "\n".join(lines), verdict])
