"""Progress bars (rich, on stderr): the commands' stdout carries their result and nothing
else; a terminal gets a redrawn bar, a pipe or a log one line per bar; serving never loads
rich."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading

import pytest

from benchmarks.suite.runner import Bar
from router.cli.main import main
from router.cli.progress import progress_callback, stderr_progress
from tests.conftest import EXAMPLE_CATALOG, ROOT

EXAMPLE_QUERIES = ROOT / "examples" / "queries.jsonl"
EVAL = ["eval", "--catalog", str(EXAMPLE_CATALOG), "--queries", str(EXAMPLE_QUERIES)]
BM25 = [*EVAL, "--mode", "bm25"]  # no model: the bar is the 12 queries'


def test_eval_off_a_terminal_prints_its_table_and_one_progress_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(BM25) == 0

    out, err = capsys.readouterr()
    assert out.startswith(f"catalog {EXAMPLE_CATALOG}: 32 tools; queries ")
    assert "queries" in out and "\x1b" not in out and "12/12" not in out
    bars = [line for line in err.splitlines() if line.startswith("queries ")]
    assert len(bars) == 1 and "100%" in bars[0] and "12/12" in bars[0]
    assert "\r" not in err and "\x1b" not in err  # no redraws, no colours in a log


@pytest.mark.processes
def test_eval_on_a_terminal_redraws_the_bar_on_stderr_only() -> None:
    """stderr is a pseudo-terminal, stdout a pipe (`mcp-router eval ... > table.txt`)."""
    parent, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "router", *BM25],
        stdout=subprocess.PIPE,
        stderr=child,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100"},
    )
    os.close(child)
    chunks: list[bytes] = []

    def drain() -> None:  # a full pty buffer would block the child
        while True:
            try:
                data = os.read(parent, 4096)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        out, _ = process.communicate(timeout=120)
    finally:
        reader.join(timeout=10)
        os.close(parent)
    err = b"".join(chunks).decode()

    assert process.returncode == 0, err
    assert out.decode().startswith(f"catalog {EXAMPLE_CATALOG}: 32 tools; queries ")
    assert b"\x1b" not in out and b"\r" not in out
    assert "\r\x1b[2Kqueries " in err  # redrawn in place
    assert "12/12" in err


def test_a_step_that_reports_nothing_draws_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_callback("embedding tools"):
        pass  # everything came from the cache

    assert capsys.readouterr() == ("", "")


def test_the_bar_ends_when_done_reaches_total(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_callback("embedding tools") as report:
        for done in range(0, 65, 32):
            report(done, 64)
        print("index: 64 tools")  # printed after the bar, not before

    out, err = capsys.readouterr()
    assert out == "index: 64 tools\n"
    assert err.count("\n") == 1 and err.startswith("embedding tools ") and "64/64" in err


def test_the_benchmark_bar_logs_each_stage_off_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with stderr_progress() as progress:
        bar = Bar(progress, progress.add_task("", total=4))
        bar.stage("msc_bench: index")
        bar.advance(3)
        bar.stage("msc_bench +5000: queries")
        bar.advance(1)

    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == ""
    assert lines[:2] == ["msc_bench: index (0/4)", "msc_bench +5000: queries (3/4)"]
    assert lines[2].startswith("msc_bench +5000: queries ") and "4/4" in lines[2]
    assert "\r" not in err and "\x1b" not in err


def test_no_progress_means_no_output(capsys: pytest.CaptureFixture[str]) -> None:
    with stderr_progress(disable=True) as progress:
        bar = Bar(progress, progress.add_task("", total=2))
        bar.stage("bfcl: index")
        bar.advance(2)

    assert capsys.readouterr() == ("", "")


@pytest.mark.processes
def test_the_cli_and_the_servers_do_not_load_rich() -> None:
    code = (
        "import sys\n"
        "from router.cli.main import build_parser\n"
        "import router.cli.serve, router.server.lifecycle.stdio, router.server.http.serve\n"
        "build_parser()\n"
        "print('RICH', sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert "RICH []" in done.stdout, done.stderr
