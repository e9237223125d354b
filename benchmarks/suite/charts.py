"""PNG charts of a bench report (matplotlib, optional: `pip install '.[bench]'`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from benchmarks.suite.methods import method_order
from benchmarks.suite.render import label, scale_metric
from benchmarks.suite.tokens import FORMATS, K_VALUES

ACCURACY = "accuracy-vs-catalog-size.png"
SAVED_VS_K = "tokens-saved-vs-k.png"
TOKENS_VS_SIZE = "tokens-vs-catalog-size.png"


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_charts(report: dict[str, Any], folder: Path, stem: str) -> list[Path]:
    """The three charts, named `<stem>-<chart>.png`; nothing when matplotlib is missing."""
    if not available() or not report["sets"]:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in ((ACCURACY, _accuracy), (SAVED_VS_K, _saved_vs_k), (TOKENS_VS_SIZE, _tokens)):
        sets = report["sets"]
        figure, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4.2), squeeze=False)
        for axis, s in zip(axes[0], sets, strict=True):
            draw(axis, s, report)
        axes[0][0].legend(fontsize=8, loc="best")
        figure.suptitle(_title(name, report), fontsize=11)
        figure.tight_layout()
        path = folder / f"{stem}-{name}"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


def _title(name: str, report: dict[str, Any]) -> str:
    where = f"(code {report['code_commit']}, model {report['model']})"
    return {
        ACCURACY: f"Recall@5 as distractor tools are added {where}",
        SAVED_VS_K: f"Tokens saved by the routed list + meta-tools vs listing every tool {where}",
        TOKENS_VS_SIZE: f"Tokens listed as the catalog grows, MCP format {where}",
    }[name]


def _points(s: dict[str, Any]) -> list[dict[str, Any]]:
    return [s["base"], *s["scaled"]]


def _accuracy(axis: Any, s: dict[str, Any], report: dict[str, Any]) -> None:
    points = _points(s)
    sizes = [p["tools"] for p in points]
    for method in method_order([m for m in s["base"]["methods"] if m != "none"]):
        values = [scale_metric(p, method, "recall@5") for p in points]
        width = 2.5 if method == "hybrid" else 1.2
        axis.plot(sizes, values, marker="o", linewidth=width, label=label(method).strip("*"))
    axis.set_xscale("log")
    axis.set_ylim(0, 1)
    axis.set_xlabel("tools in the catalog (log)")
    axis.set_ylabel("Recall@5")
    axis.set_title(s["name"])
    axis.grid(alpha=0.3)


def _saved_vs_k(axis: Any, s: dict[str, Any], report: dict[str, Any]) -> None:
    per_k = s["base"]["tokens"]["k"]
    for fmt in FORMATS:
        values = [per_k[str(k)][fmt]["with_meta_saved_percent"] for k in K_VALUES]
        axis.plot(K_VALUES, values, marker="o", label=fmt)
    axis.set_xticks(K_VALUES)
    axis.set_xlabel("k (tools listed)")
    axis.set_ylabel("% of tokens saved")
    axis.set_title(f"{s['name']} ({s['base']['tools']:,} tools)")
    axis.grid(alpha=0.3)


def _tokens(axis: Any, s: dict[str, Any], report: dict[str, Any]) -> None:
    points = _points(s)
    sizes = [p["tools"] for p in points]
    axis.plot(sizes, [p["full_tokens"]["mcp"] for p in points], marker="o", label="all listed")
    for k in K_VALUES:
        values = [p["tokens"]["k"][str(k)]["mcp"]["with_meta_mean"] for p in points]
        axis.plot(sizes, values, marker=".", label=f"router k={k} + meta")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("tools in the catalog (log)")
    axis.set_ylabel("tokens (log)")
    axis.set_title(s["name"])
    axis.grid(alpha=0.3)
