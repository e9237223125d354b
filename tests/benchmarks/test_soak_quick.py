"""The soak benchmark's short run (`python -m benchmarks.soak --seconds 10 --warmup 5`, ten
clients), held to the full run's correctness checks: no failed request, no fd or session left
behind, every request kind and session mode served. The README's soak section is checked
against the committed result. The measurement (the router's RSS grown by at most 10% from the
end of the warm-up, over 30 minutes) is the benchmark's own: a ten-second run checks that the
benchmark computes it and fails on it, not the figure."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.soak import cli, report
from benchmarks.suite.readme import replace_between
from tests.conftest import ROOT

pytestmark = pytest.mark.exclusive  # a load of 20 clients: beside other tests it measures them

SECONDS = 10
WARMUP = 5
CLIENTS = 10
RUN_TIMEOUT = 240


@pytest.fixture(scope="module")
def short_soak(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("soak") / "soak.json"
    command = [sys.executable, "-m", "benchmarks.soak", "--seconds", str(SECONDS)]
    command += ["--warmup", str(WARMUP), "--clients", str(CLIENTS), "--interval", "1"]
    began = time.perf_counter()
    done = subprocess.run(
        [*command, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert out.is_file(), done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result["_test"] = {"exit": done.returncode, "seconds": time.perf_counter() - began}
    return result


def _check(result: dict[str, Any], what: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["what"] == what)


def test_short_soak_fails_no_request(short_soak: dict[str, Any]) -> None:
    assert short_soak["requests"]["failed"] == 0, short_soak["requests"]["errors"]
    assert short_soak["warmup"]["requests"]["failed"] == 0, short_soak["warmup"]["requests"]
    kinds = short_soak["requests"]["by_kind"]
    for kind in ("search_tools", "call_by_name", "call_tool", "route", "open_legacy"):
        assert kinds[kind] > 0, kinds
    assert set(short_soak["requests"]["sessions_opened_by_mode"]) == {"legacy", "auto", "sse"}


def test_short_soak_leaves_no_fd_and_no_session_open(short_soak: dict[str, Any]) -> None:
    fds = short_soak["fds"]["router"]
    assert fds["end"] <= fds["warmup_end"], fds
    assert fds["max_under_load"] > fds["warmup_end"]  # the clients' connections were counted
    quiet = short_soak["quiet_points"]
    assert quiet["warmup_end"]["settled"] and quiet["end"]["settled"]
    assert quiet["end"]["sessions"] == 0
    children = short_soak["memory"]["children_rss_mib"]
    assert children["count_end"] == children["count_warmup_end"] > 0


def test_short_soak_checks_the_router_rss_growth_after_warm_up(
    short_soak: dict[str, Any],
) -> None:
    # the figure itself is the full run's (benchmarks/results/soak.json, checked below)
    rss = short_soak["memory"]["router_rss_mib"]
    check = _check(short_soak, "router RSS growth, warm-up end to end")
    assert rss["growth_percent"] is not None and rss["end"] > 0, rss
    assert check["pass"] == (rss["growth_percent"] <= report.RSS_GROWTH_LIMIT), check


def test_short_soak_reads_the_processes_through_the_run(short_soak: dict[str, Any]) -> None:
    samples = short_soak["samples"]
    assert {s["phase"] for s in samples} >= {"warm-up", "run"}
    assert len([s for s in samples if s["phase"] == "run"]) >= SECONDS - 2  # every second
    assert all(s["router_rss_kib"] > 0 and s["router_fds"] > 0 for s in samples)
    assert [s["t_s"] for s in samples] == sorted(s["t_s"] for s in samples)


def test_short_soak_exits_1_exactly_when_a_check_fails(short_soak: dict[str, Any]) -> None:
    assert short_soak["pass"] == all(c["pass"] for c in short_soak["checks"])
    assert short_soak["_test"]["exit"] == (0 if short_soak["pass"] else 1)


def test_checks_fail_when_the_figures_do(short_soak: dict[str, Any]) -> None:
    worse = json.loads(json.dumps(short_soak))
    worse["memory"]["router_rss_mib"]["growth_percent"] = 10.5
    worse["fds"]["router"]["end"] = worse["fds"]["router"]["warmup_end"] + 1
    worse["requests"]["failed"] = 1
    failed = {c["what"] for c in report.checks(worse) if not c["pass"]}
    assert failed == {
        "failed requests (warm-up and run)",
        "router RSS growth, warm-up end to end",
        "router open fds, end minus warm-up end",
    }


def test_markdown_is_made_from_the_json_alone(short_soak: dict[str, Any]) -> None:
    text = report.markdown(json.loads(json.dumps(short_soak)))
    assert text.count("\n| ") >= len(short_soak["checks"]) + 5
    assert f"`{short_soak['command']}`" in text
    assert all(f"- {note}" in text for note in short_soak["notes"])


def test_the_command_shown_leaves_the_notes_out() -> None:
    command = "python -m benchmarks.soak --note 'a b' --minutes 30 --note=c"
    assert report.command_without_notes(command) == "python -m benchmarks.soak --minutes 30"


def test_soak_section_is_the_committed_result_rendered() -> None:
    if not cli.OUT.is_file():
        pytest.skip("no committed soak.json yet")
    result = json.loads(cli.OUT.read_text(encoding="utf-8"))
    assert result["pass"], "the committed full run failed a check"
    readme: Path = cli.README
    text = readme.read_text(encoding="utf-8")
    assert replace_between(text, cli.START, cli.END, report.markdown(result)) == text
