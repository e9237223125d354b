"""The benchmark suite's quick mode: a small slice of the public sets, the hashing embedder.

A smoke test so the suite never rots; the full run (`python -m benchmarks`) is not a test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.suite import charts, cli, readme
from router.cli import bench
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.skipif(
        not (SHARED_DATA / "msc_bench").is_dir(), reason="the public sets are not beside the repo"
    ),
    pytest.mark.processes,
]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("bench")
    code = cli.main(["--quick", "--out", str(out), "--no-progress"])
    assert code == 0
    return out, json.loads((out / "bench.json").read_text(encoding="utf-8"))


def test_quick_run_measures_every_set_size_and_method(
    quick_run: tuple[Path, dict[str, Any]],
) -> None:
    _, report = quick_run
    assert report["schema"] == "mcp-router.bench/1" and report["run"] == "quick"
    assert [s["name"] for s in report["sets"]] == ["msc_bench", "bfcl", "metatool"]
    for s in report["sets"]:
        points = [s["base"], *s["scaled"]]
        assert [p["distractors"] for p in s["scaled"]] == report["settings"]["distractors"]
        assert [p["tools"] for p in points] == sorted(p["tools"] for p in points)
        for point in points:
            methods = point["methods"]
            assert {"none", "random", "bm25", "dense", "hybrid"} <= set(methods)
            for name, entry in methods.items():
                if name != "none":
                    assert 0.0 <= entry["metrics"]["recall@5"] <= 1.0
            assert set(point["tokens"]["k"]) == {"1", "3", "5", "10"}
            k5 = point["tokens"]["k"]["5"]
            assert set(k5) == {"mcp", "openai", "anthropic"}
            assert k5["mcp"]["mean"] < point["full_tokens"]["mcp"]


def test_quick_run_prices_meta_tools_and_checks_token_counts(
    quick_run: tuple[Path, dict[str, Any]],
) -> None:
    _, report = quick_run
    assert report["meta_tools"]["names"] == ["search_tools", "call_tool"]
    assert all(count > 100 for count in report["meta_tools"]["tokens"].values())
    for s in report["sets"]:
        # lists are counted from cached per-tool counts, exactly as encoding them whole
        for gap in s["base"]["exact_check"].values():
            assert gap == {"full_list": 0, "routed_max": 0}
        budgets = s["base"]["tokens"]["budgets"]
        assert all(b["tokens_mean"] <= int(budget) + 10 for budget, b in budgets.items())


def test_quick_run_writes_markdown_and_charts(quick_run: tuple[Path, dict[str, Any]]) -> None:
    out, report = quick_run
    text = (out / "bench.md").read_text(encoding="utf-8")
    assert "### Acceptance: margins with 95% intervals" in text and "router (hybrid)" in text
    assert report["acceptance"]["checks"]
    if charts.available():
        assert (out / "bench-accuracy-vs-catalog-size.png").stat().st_size > 1000


def test_fastmcp_is_compared_or_skipped_with_a_reason(
    quick_run: tuple[Path, dict[str, Any]],
) -> None:
    _, report = quick_run
    fastmcp = report["fastmcp"]
    methods = report["sets"][0]["base"]["methods"]
    if fastmcp["version"]:
        assert "fastmcp_bm25" in methods
    else:
        assert "pip install" in fastmcp["skipped"] and "fastmcp_bm25" not in methods


def test_readme_markers_are_replaced_and_kept() -> None:
    text = "intro\n<!-- bench:start -->\nold\n<!-- bench:end -->\ntail\n"
    new = readme.replace_between(text, readme.START, readme.END, "new")
    assert new == "intro\n<!-- bench:start -->\nnew\n<!-- bench:end -->\ntail\n"
    with pytest.raises(ValueError, match="markers"):
        readme.replace_between("no markers", readme.START, readme.END, "x")


def test_mcp_router_bench_takes_the_suite_options() -> None:
    parser = argparse.ArgumentParser()
    bench.register(parser.add_subparsers())
    args = parser.parse_args(["bench", "--quick", "--sizes", "100"])
    assert args.quick and args.handler is bench.run
