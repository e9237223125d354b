"""The people's-requests section of benchmarks/README.md, rendered from
`benchmarks/results/peoples-requests-{dev,test}.json`: no figure in it is typed by hand."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.suite.readme import replace_between

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- peoples-requests:start -->", "<!-- peoples-requests:end -->"
SECOND = ("<!-- peoples-requests-2:start -->", "<!-- peoples-requests-2:end -->")
"""The second set's section (benchmarks/data/peoples_requests_2/)."""
GROUPS = ("lang=en", "lang=de", "lang=fr", "lang=es", "steps=1", "steps=2", "steps=3", "typo=yes")
"""The breakdown rows shown (the result files also break the figures down by server)."""


def _figure(value: Mapping[str, float]) -> str:
    return f"{value['mean']:.3f} [{value['low']:.3f}, {value['high']:.3f}]"


def summary_line(report: Mapping[str, Any]) -> str:
    """One line per mode: the half's three figures with their intervals."""
    lines = []
    for run in report["runs"]:
        figures = run["figures"]
        lines.append(
            f"{report['split']} {run['mode']}: top-1 {_figure(figures['top1'])}, "
            f"hit@5 {_figure(figures['hit@5'])}, Recall@5 {_figure(figures['recall@5'])}"
        )
    seconds = report["seconds"]
    lines.append(
        f"{report['queries']['count']} requests, {report['catalog']['tools']} tools; index "
        f"{seconds['index']:.1f} s, ranking {seconds['ranking']:.1f} s, "
        f"total {seconds['total']:.1f} s"
    )
    return "\n".join(lines)


def markdown(reports: Mapping[str, Mapping[str, Any]]) -> str:
    """The section's body: how it ran, the figures per half and mode, the breakdown."""
    if not reports:
        return "No results yet: run `python -m benchmarks.peoples_requests`."
    first = next(iter(reports.values()))
    runs = "; ".join(
        f"{split} at commit `{r['commit']}`, index {r['seconds']['index']:.1f} s, "
        f"ranking {r['seconds']['ranking']:.1f} s, whole run {r['seconds']['total']:.1f} s"
        for split, r in reports.items()
    )
    boot = first["bootstrap"]
    model = f"model `{first['model']}`" if first["model"] else "no model (BM25 alone)"
    lines = [
        f"The router's default retrieval, {model}, k = {first['k']}, "
        f"{first['catalog']['tools']} tools; "
        f"{first['machine']}, {first['cpus']} CPU cores, Python {first['python']}. "
        f"Intervals: {boot['confidence']:.0%} percentile bootstrap over the requests, "
        f"{boot['resamples']:,} resamples, seed {boot['seed']}. Runs: {runs}.",
        "",
        "| half | mode | requests | top-1 [95%] | hit@5 [95%] | Recall@5 [95%] | p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, report in reports.items():
        for run in report["runs"]:
            figures = run["figures"]
            cells = [_figure(figures[name]) for name in ("top1", "hit@5", "recall@5")]
            if run["mode"] == "hybrid":
                cells = [f"**{cell}**" for cell in cells]
            lines.append(
                f"| {split} | {run['mode']} | {report['queries']['count']} | "
                + " | ".join(cells)
                + f" | {run['latency_ms']['p50']:.1f} |"
            )
    shown = _shown_mode(reports)
    lines += [
        "",
        f"The {shown} ranking by kind of request (top-1 / hit@5, requests):",
        "",
        "| half | " + " | ".join(GROUPS) + " |",
        "|---|" + "---|" * len(GROUPS),
    ]
    for split, report in reports.items():
        run = next(run for run in report["runs"] if run["mode"] == shown)
        cells = []
        for name in GROUPS:
            group = run["groups"].get(name)
            cells.append(
                f"{group['top1']['mean']:.2f} / {group['hit@5']['mean']:.2f} ({group['count']})"
                if group
                else "-"
            )
        lines.append(f"| {split} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _shown_mode(reports: Mapping[str, Mapping[str, Any]]) -> str:
    """The default ranking when every half measured it, else the first mode they share."""
    shared = [run["mode"] for run in next(iter(reports.values()))["runs"]]
    for report in reports.values():
        modes = {run["mode"] for run in report["runs"]}
        shared = [mode for mode in shared if mode in modes]
    return "hybrid" if "hybrid" in shared else shared[0]


def update_readme(
    reports: Mapping[str, Mapping[str, Any]],
    readme: Path = README,
    markers: tuple[str, str] = (START, END),
) -> None:
    text = readme.read_text(encoding="utf-8")
    readme.write_text(replace_between(text, *markers, markdown(reports)), encoding="utf-8")
