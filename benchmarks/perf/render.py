"""The markdown of a perf report, made from its JSON alone (so `--table-only` reproduces it
byte for byte)."""

from __future__ import annotations

from typing import Any

_RESULT = {True: "pass", False: "**FAIL**", None: "not measured"}
_SEARCH_METHODS = (
    ("router_onnx_hybrid", "router ONNX hybrid"),
    ("router_torch_hybrid", "router torch hybrid"),
    ("router_bm25", "router BM25"),
    ("fastmcp_bm25", "FastMCP BM25"),
)


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def run_line(report: dict[str, Any]) -> str:
    machine = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v)
    before = machine["load_average_before"]
    after = machine["load_average_after"]
    dirty = report.get("uncommitted_changes") or []
    note = f" (plus uncommitted changes to {len(dirty)} measured files)" if dirty else ""
    return (
        f"{report['run'].capitalize()} run `{report['command']}` at commit "
        f"`{report['commit']}`{note}, {report['date']}, {report['wall_seconds'] / 60:.1f} min "
        f"on {machine['platform']}, {machine['cpus']} CPUs; load average (1/5/15 min) "
        f"{before[0]:.2f}/{before[1]:.2f}/{before[2]:.2f} before, "
        f"{after[0]:.2f}/{after[1]:.2f}/{after[2]:.2f} after. {versions}. Ratios within this "
        "run are what count: absolute times on a shared 2-core machine are noisy."
    )


_DIGITS = {"MB": 1}


def _value(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    return f"{_num(value, _DIGITS.get(unit, 2))} {unit}".strip()


def targets_table(report: dict[str, Any]) -> str:
    rows = []
    for c in report["targets"]:
        limit = _value(c["limit"], c["unit"])
        limit = limit if c["op"] == "==" else f"{c['op']} {limit}"
        rows.append([c["what"], _value(c["measured"], c["unit"]), limit, _RESULT[c["pass"]]])
    return _table(["check", "measured", "target", "result"], rows)


def startup_table(part: dict[str, Any]) -> str:
    rows = []
    for label, block in part["upstreams"].items():
        for name, entry in block["systems"].items():
            tops = entry.get("top_tools")
            first = ", ".join(sorted(set(tops))) if tops else "-"
            rows.append(
                [
                    f"{label} ({len(block['upstreams'])})",
                    name,
                    _num(entry["initialize_s"]),
                    _num(entry.get("search_s")),
                    first,
                    _num(entry.get("correct")),
                ]
            )
    head = [
        "upstreams",
        "system",
        "initialize (s)",
        "first search answered (s)",
        "first tool",
        "correct",
    ]
    return _table(head, rows)


def search_table(part: dict[str, Any]) -> str:
    present = [
        (k, label) for k, label in _SEARCH_METHODS if any(k in s["methods"] for s in part["sizes"])
    ]
    rows = []
    for size in part["sizes"]:
        row = [_num(size["tools"])]
        for key, _ in present:
            m = size["methods"].get(key)
            row.append(f"{m['p50_ms']:.2f} / {m['p99_ms']:.2f}" if m else "-")
        rows.append(row)
    return _table(["tools", *(f"{label} p50 / p99 ms" for _, label in present)], rows)


def embedding_table(part: dict[str, Any]) -> str:
    rows = [
        [
            name,
            e["model"],
            _num(e["texts"]),
            _num(e["docs_per_s"], 1),
            f"{e['query']['p50_ms']:.2f} / {e['query']['p99_ms']:.2f}",
        ]
        for name, e in part["backends"].items()
    ]
    head = ["backend", "model (cache key)", "texts", "documents/s", "one query p50 / p99 ms"]
    return _table(head, rows)


def memory_table(part: dict[str, Any]) -> str:
    rows = [
        [
            r["system"],
            r["upstreams"],
            r["cache"] or "-",
            _num(r["steady_mb"], 1),
            _num(r["peak_mb"], 1),
            _num(r["indexed_s"]),
            _num(r["complete"]),
        ]
        for r in part["runs"]
    ]
    head = [
        "system",
        "upstreams",
        "cache",
        "steady MB",
        "peak MB",
        "indexed after (s)",
        "all indexed",
    ]
    return _table(head, rows)


def calls_table(part: dict[str, Any]) -> str:
    rows = []
    for tool, entry in part["targets"].items():
        for path, m in entry["paths"].items():
            extra = [
                _num(entry["overhead_p50_ms"].get(path)),
                _num(entry["overhead_p99_ms"].get(path)),
            ]
            rows.append([tool, path, f"{m['p50_ms']:.2f}", f"{m['p99_ms']:.2f}", *extra])
    several = part.get("fastmcp_several_servers")
    if several:
        rows.append(
            [
                several["tool"],
                f"fastmcp, {len(several['servers'])} servers in one proxy",
                f"{several['p50_ms']:.2f}",
                f"{several['p99_ms']:.2f}",
                "-",
                "-",
            ]
        )
    head = ["tool", "path", "p50 ms", "p99 ms", "overhead p50 ms", "overhead p99 ms"]
    return _table(head, rows)


def _section(title: str, part: dict[str, Any] | None, body: Any) -> list[str]:
    if part is None:
        return []
    if "skipped" in part:
        return [f"**{title}**: skipped ({part['skipped']})."]
    return [f"**{title}**", body(part)]


def markdown(report: dict[str, Any]) -> str:
    """The generated section, without the markers."""
    search = report.get("search")
    search_title = "Search latency"
    if search and "skipped" not in search:
        search_title += (
            f" (k = 5, {search['queries']} queries of {search['set']} one at a "
            "time; query embedding included in hybrid)"
        )
    embedding = report.get("embedding")
    embed_title = "Embedding throughput (no cache)"
    if embedding and embedding.get("onnx_over_torch") is not None:
        embed_title += f": ONNX is {embedding['onnx_over_torch']:.2f}x torch"
    parts = [
        run_line(report),
        targets_table(report),
        *_section("Start-up (median)", report.get("startup"), startup_table),
        *_section(search_title, search, search_table),
        *_section(embed_title, embedding, embedding_table),
        *_section(
            "Resident memory of the server process alone", report.get("memory"), memory_table
        ),
        *_section("Call overhead", report.get("calls"), calls_table),
    ]
    return "\n\n".join(parts)
