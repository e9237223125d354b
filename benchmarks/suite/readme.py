"""The generated part of benchmarks/README.md: everything between the bench markers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmarks.suite import render

START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def replace_between(text: str, start: str, end: str, body: str) -> str:
    """`text` with what lies between the markers replaced (markers kept).

    Raises:
        ValueError: The markers are missing.
    """
    head, found, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise ValueError(f"markers {start} ... {end} not found")
    return f"{head}{start}\n{body}\n{end}{tail}"


def section(report: dict[str, Any], charts: list[Path], readme: Path) -> str:
    """The markdown of one run, charts linked relative to the README."""
    parts = [render.run_line(report)]
    if charts:
        links = [
            f"![{p.stem}]({Path(os.path.relpath(p, readme.parent)).as_posix()})" for p in charts
        ]
        parts.append("\n\n".join(links))
    if report["sets"]:
        parts += _dataset_sections(report)
    parts += ["### Live upstreams", render.live_table(report)]
    return "\n\n".join(p for p in parts if p)


def _dataset_sections(report: dict[str, Any]) -> list[str]:
    return [
        "### Acceptance: margins with 95% intervals (test half)",
        render.acceptance_table(report),
        "### Selection accuracy at each set's own size",
        render.accuracy_table(report),
        "### Recall@5 as distractors are added",
        render.scale_table(report),
        "### all-hit@5 (every needed tool in the top 5) as distractors are added",
        render.scale_table(report, "all_hit@5"),
        "### Multi-tool queries (MSC-Bench level 3: sequences, level 4: graphs)",
        render.groups_table(report),
        "### Tokens of the listing at each set's own size",
        render.tokens_table(report),
        "### Token budgets instead of k (router, MCP format)",
        render.budget_table(report),
        "### Tokens as the catalog grows",
        render.growth_table(report),
        "### Cost",
        render.cost_table(report),
        render.cold_line(report),
    ]


def update(readme: Path, report: dict[str, Any], charts: list[Path]) -> None:
    text = readme.read_text(encoding="utf-8")
    readme.write_text(
        replace_between(text, START, END, section(report, charts, readme)), encoding="utf-8"
    )
