"""The perf benchmark's quick mode (`python -m benchmarks.perf --quick`): a smoke run so it
never rots, checked for the shape of its JSON; and the READMEs' perf sections checked
against the committed result. The full run is not a test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.perf import cli, render, summary
from benchmarks.perf.options import RESULTS
from benchmarks.suite.readme import replace_between
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.skipif(
        not (SHARED_DATA / "metatool").is_dir(), reason="the public sets are not beside the repo"
    ),
    pytest.mark.exclusive,  # start-up and search timings: beside other tests they measure them
]
SECTIONS = ("startup", "calls", "memory", "search", "embedding")


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("perf")
    assert cli.main(["--quick", "--out", str(out)]) == 0
    report: dict[str, Any] = json.loads((out / "perf.json").read_text(encoding="utf-8"))
    return report


def test_quick_run_records_where_and_when_it_ran(quick_report: dict[str, Any]) -> None:
    assert quick_report["schema"] == "mcp-router.perf/1" and quick_report["run"] == "quick"
    assert quick_report["date"].endswith("Z") and quick_report["wall_seconds"] > 0
    machine = quick_report["machine"]
    assert len(machine["load_average_before"]) == len(machine["load_average_after"]) == 3
    assert machine["cpus"] >= 1
    assert {"onnxruntime", "torch", "fastmcp"} <= set(quick_report["versions"])
    assert quick_report["versions"]["onnxruntime"]


def test_every_section_is_measured_or_says_why_not(quick_report: dict[str, Any]) -> None:
    for name in SECTIONS:
        section = quick_report[name]
        assert isinstance(section, dict) and section
        if "skipped" in section:
            assert isinstance(section["skipped"], str) and section["skipped"]
    search = quick_report["search"]
    assert [s["tools"] for s in search["sizes"]] == [250]
    onnx = search["sizes"][0]["methods"]["router_onnx_hybrid"]
    assert onnx["n"] == search["queries"] and 0 < onnx["p50_ms"] <= onnx["p99_ms"]
    assert quick_report["embedding"]["backends"]["onnx"]["docs_per_s"] > 0
    catalog = [r for r in quick_report["memory"]["runs"] if r["upstreams"] == "catalog-250"]
    assert [r["cache"] for r in catalog] == ["cold", "warm"]
    assert all(r["complete"] and r["peak_mb"] >= r["steady_mb"] > 0 for r in catalog)


def test_started_systems_answer_the_first_search(quick_report: dict[str, Any]) -> None:
    startup = quick_report["startup"]
    if "skipped" in startup:
        pytest.skip(startup["skipped"])
    systems = startup["upstreams"]["time"]["systems"]
    assert systems["router-onnx-warm"]["correct"] and systems["router-onnx-cold"]["correct"]
    assert systems["direct"]["initialize_s"] > 0
    assert systems["router-onnx-warm"]["initialize_s"] <= systems["router-onnx-warm"]["search_s"]


def test_every_check_says_pass_fail_or_not_measured(quick_report: dict[str, Any]) -> None:
    checks = quick_report["targets"]
    assert checks
    for check in checks:
        assert check["pass"] in (True, False, None)
        assert check["op"] in ("<=", ">=", "==") and check["what"]
        assert (check["pass"] is None) == (check["measured"] is None)
    embedding = [c for c in checks if c["what"].startswith("embedding")]
    assert [c["pass"] for c in embedding] == [None]  # quick mode runs no torch


def test_markdown_is_made_from_the_json_alone(quick_report: dict[str, Any]) -> None:
    again = json.loads(json.dumps(quick_report))
    assert render.markdown(again) == render.markdown(quick_report)
    assert "| check | measured | target | result |" in render.markdown(quick_report)
    assert summary.markdown(quick_report).count("\n| ") >= 3


@pytest.mark.parametrize("readme", [cli.README, cli.BENCH_README], ids=["README", "bench"])
def test_readme_perf_section_is_the_committed_result_rendered(readme: Path) -> None:
    result = RESULTS / "perf.json"
    if not result.is_file():
        pytest.skip("no committed perf result yet")
    report = json.loads(result.read_text(encoding="utf-8"))
    body = summary.markdown(report) if readme == cli.README else render.markdown(report)
    text = readme.read_text(encoding="utf-8")
    assert replace_between(text, cli.START, cli.END, body) == text
