"""The perf guard (`python -m benchmarks.perf --guard`): its quick mode run against HEAD as
the baseline, checked for the shape of its report (no timing is asserted); the flagging of a
ratio past 1.10, fed figures made slower on purpose; and the READMEs' perf-guard sections
against the committed result. The full run is not a test."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.perf import cli, guard, guard_report
from benchmarks.perf.options import RESULTS, ROOT
from benchmarks.suite.readme import replace_between

METRICS = [key for key, _, _ in guard_report.METRICS]


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("guard")
    argv = ["--guard", "--quick", "--baseline", "HEAD", "--out", str(out)]
    assert cli.main(argv) == 0
    report: dict[str, Any] = json.loads((out / guard.OUT_NAME).read_text(encoding="utf-8"))
    return report


@pytest.mark.processes
@pytest.mark.exclusive  # start-up and search timings: beside other tests they measure them
def test_the_quick_guard_measures_both_trees_in_the_same_run(quick_report: dict[str, Any]) -> None:
    assert quick_report["schema"] == guard.SCHEMA and quick_report["run"] == "quick"
    baseline = quick_report["baseline"]
    assert baseline["rev"] == "HEAD"
    # HEAD when the run began (a commit may land meanwhile): one of HEAD's own commits
    ancestor = ["git", "merge-base", "--is-ancestor", baseline["commit"], "HEAD"]
    assert subprocess.run(ancestor, cwd=ROOT).returncode == 0
    assert quick_report["settings"]["rounds"] == 1 and quick_report["settings"]["upstreams"]
    assert quick_report["skipped"] == {}
    for label in ("baseline", "current"):
        figures = quick_report["trees"][label]
        assert set(METRICS) <= set(figures), (label, figures)
        assert figures["first_search_right"] is True
        assert 0 < figures["initialize_s"] <= figures["first_search_s"]
        assert 0 < figures["search_p50_ms"] <= figures["search_p95_ms"]
        assert figures["rss_mb"] > 0 and figures["catalog_rss_mb"] > 0
        (rounds,) = quick_report["samples"][label]
        assert len(rounds["catalog"]["search_ms"]) == quick_report["settings"]["queries"] > 0
        assert len(rounds["small"]["router_call_ms"]) == quick_report["settings"]["calls"]


@pytest.mark.processes
@pytest.mark.exclusive
def test_every_ratio_is_this_tree_over_the_baseline(quick_report: dict[str, Any]) -> None:
    entries = quick_report["ratios"]
    assert [e["metric"] for e in entries] == METRICS
    trees = quick_report["trees"]
    for entry in entries:
        old, new = trees["baseline"][entry["metric"]], trees["current"][entry["metric"]]
        assert (entry["baseline"], entry["current"]) == (old, new)
        if old > 0:
            assert entry["ratio"] == round(new / old, 3)
            assert entry["flagged"] == (entry["ratio"] > quick_report["threshold"])
        else:
            assert entry["ratio"] is None and entry["flagged"] is False
    assert quick_report["flagged"] == [e["metric"] for e in entries if e["flagged"]]
    assert guard_report.markdown(json.loads(json.dumps(quick_report))) == guard_report.markdown(
        quick_report
    )


@pytest.mark.processes
@pytest.mark.exclusive
def test_a_slower_tree_is_flagged_past_1_10_and_not_below(quick_report: dict[str, Any]) -> None:
    baseline = quick_report["trees"]["baseline"]
    slower = dict(baseline)
    slower["search_p50_ms"] = baseline["search_p50_ms"] * 1.25
    slower["initialize_s"] = baseline["initialize_s"] * 1.05  # within the margin
    slower["rss_mb"] = baseline["rss_mb"] * 0.8  # better
    entries = {e["metric"]: e for e in guard_report.ratios(baseline, slower)}
    assert entries["search_p50_ms"]["flagged"] and entries["search_p50_ms"]["ratio"] == 1.25
    assert not entries["initialize_s"]["flagged"] and entries["initialize_s"]["ratio"] == 1.05
    assert not entries["rss_mb"]["flagged"]
    assert [m for m, e in entries.items() if e["flagged"]] == ["search_p50_ms"]
    report = {**quick_report, "ratios": list(entries.values())}
    text = guard_report.markdown(report)
    assert text.count("**FLAGGED**") == 1
    assert "Flagged (this tree over 1.10x the baseline): search p50 at" in text


def test_a_measurement_missing_or_at_zero_is_never_flagged() -> None:
    entries = guard_report.ratios({"call_overhead_ms": 0.0}, {"call_overhead_ms": 0.4})
    overhead = next(e for e in entries if e["metric"] == "call_overhead_ms")
    assert overhead["ratio"] is None and overhead["flagged"] is False
    assert all(e["ratio"] is None and not e["flagged"] for e in entries)


@pytest.mark.parametrize("readme", guard.READMES, ids=["performance", "bench"])
def test_readme_guard_section_is_the_committed_result_rendered(readme: Path) -> None:
    result = RESULTS / guard.OUT_NAME
    if not result.is_file():
        pytest.skip("no committed perf-guard result yet")
    body = guard_report.markdown(json.loads(result.read_text(encoding="utf-8")))
    text = readme.read_text(encoding="utf-8")
    assert replace_between(text, guard.START, guard.END, body) == text
