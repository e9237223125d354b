"""The guard's verdict and markdown, made from its JSON alone: each measurement's ratio of
this tree to the baseline, flagged past `THRESHOLD` (so `--table-only` reproduces the
sections byte for byte)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

THRESHOLD = 1.10
"""A ratio (this tree / baseline, lower is better for every measurement) past which the
report flags the measurement."""

METRICS: tuple[tuple[str, str, str], ...] = (
    ("initialize_s", "s", "initialize answered, from spawn"),
    ("first_search_s", "s", "first right search answered, from spawn"),
    ("search_p50_ms", "ms", "search p50 at {tools} tools"),
    ("search_p95_ms", "ms", "search p95 at {tools} tools"),
    ("call_overhead_ms", "ms", "call overhead p50 over the upstream alone"),
    ("rss_mb", "MB", "RSS after the calls, small upstreams"),
    ("catalog_rss_mb", "MB", "RSS after the searches, {tools} tools"),
)
"""Key in each tree's figures, unit, and what it is (`{tools}`: the catalog's size)."""


def ratios(
    baseline: Mapping[str, Any], current: Mapping[str, Any], threshold: float = THRESHOLD
) -> list[dict[str, Any]]:
    """One entry per measurement: both figures, current / baseline, and whether it is
    flagged (ratio past `threshold`). A measurement either side lacks, or a baseline at or
    below zero (an overhead lost in the noise), has no ratio and is not flagged."""
    found = []
    for key, unit, _ in METRICS:
        old, new = baseline.get(key), current.get(key)
        ratio = None
        if isinstance(old, int | float) and isinstance(new, int | float) and old > 0:
            ratio = round(new / old, 3)
        found.append(
            {
                "metric": key,
                "unit": unit,
                "baseline": old,
                "current": new,
                "ratio": ratio,
                "flagged": ratio is not None and ratio > threshold,
            }
        )
    return found


def _num(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    digits = 1 if unit == "MB" else 3 if unit == "s" else 2
    return f"{value:,.{digits}f} {unit}"


def markdown(report: Mapping[str, Any]) -> str:
    """The generated section, without the markers."""
    base = report["baseline"]
    machine = report["machine"]
    settings = report["settings"]
    tools = settings.get("tools_served") or settings["tools"]
    lines = [
        f"{report['run'].capitalize()} run `{report['command']}` at commit `{report['commit']}`"
        + (" (plus uncommitted changes)" if report.get("uncommitted_changes") else "")
        + f" against `{base['rev']}` (`{base['commit']}`), {report['date']}, "
        f"{report['wall_seconds'] / 60:.1f} min on {machine['platform']}, {machine['cpus']} "
        f"CPUs, load average {'/'.join(f'{x:.2f}' for x in machine['load_average_before'])} "
        f"before. Rounds: {settings['rounds']} measured after {settings['warmup_rounds']}, "
        "the two trees alternated within each round "
        f"(same Python, same venv); upstreams: {settings['upstreams']}. {report['note']}",
        "",
        f"| measurement | baseline `{base['commit']}` | this tree | ratio | past "
        f"{report['threshold']:.2f} |",
        "|---|---|---|---|---|",
    ]
    described = {key: what for key, _, what in METRICS}
    for entry in report["ratios"]:
        what = described[entry["metric"]].format(tools=f"{tools:,}")
        ratio = "-" if entry["ratio"] is None else f"{entry['ratio']:.2f}"
        flag = "**FLAGGED**" if entry["flagged"] else "no"
        unit = entry["unit"]
        lines.append(
            f"| {what} | {_num(entry['baseline'], unit)} | {_num(entry['current'], unit)} "
            f"| {ratio} | {flag} |"
        )
    flagged = [described[e["metric"]].format(tools=f"{tools:,}") for e in report["ratios"]]
    flagged = [w for w, e in zip(flagged, report["ratios"], strict=True) if e["flagged"]]
    lines.append("")
    if flagged:
        lines.append(f"Flagged (this tree over {report['threshold']:.2f}x the baseline): ")
        lines[-1] += "; ".join(flagged) + "."
    else:
        lines.append(f"No measurement over {report['threshold']:.2f}x the baseline.")
    skipped = report.get("skipped") or {}
    if skipped:
        lines.append("Not measured: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()) + ".")
    return "\n".join(lines)
