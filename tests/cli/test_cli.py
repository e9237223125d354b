"""The command line, run as a user runs it (BM25 mode needs no model)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from router.cli.main import main
from tests.conftest import EXAMPLE_CATALOG, ROOT

EXAMPLE_QUERIES = ROOT / "examples" / "queries.jsonl"


@pytest.mark.processes
def test_help_does_not_import_torch_or_the_model() -> None:
    code = (
        "import sys\n"
        "from router.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'tiktoken', 'transformers')"
        " if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert "HEAVY []" in result.stderr, result.stderr
    assert "route" in result.stdout and "eval" in result.stdout


@pytest.mark.processes
def test_python_dash_m_router_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "router", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert result.stdout.startswith("mcp-router ")


def test_route_prints_ranked_tools_and_the_token_bill(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "route",
            "--catalog",
            str(EXAMPLE_CATALOG),
            "--mode",
            "bm25",
            "-k",
            "3",
            "convert a time between timezones",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[4].split()[1] == "time__convert_time"
    assert "% saved" in out and "openai" in out and "anthropic" in out


def test_route_json_reports_scores_and_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "route",
            "--catalog",
            str(EXAMPLE_CATALOG),
            "--mode",
            "bm25",
            "--json",
            "-k",
            "2",
            "git commit staged changes",
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["tools"][0]["name"] == "git__git_commit"
    assert payload["tools"][0]["bm25_score"] > 0
    mcp = payload["tokens"]["mcp"]
    assert 0 < mcp["routed"] < mcp["full"]
    assert mcp["saved_percent"] == pytest.approx(100 * (1 - mcp["routed"] / mcp["full"]), abs=0.01)


def test_route_budget_fits_the_tool_list(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "route",
            "--catalog",
            str(EXAMPLE_CATALOG),
            "--mode",
            "bm25",
            "--json",
            "--budget",
            "200",
            "file",
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["tools"]
    assert sum(t["tokens"] for t in payload["tools"]) <= 200


def test_eval_writes_the_documented_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval.json"
    code = main(
        [
            "eval",
            "--catalog",
            str(EXAMPLE_CATALOG),
            "--queries",
            str(EXAMPLE_QUERIES),
            "--mode",
            "bm25",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["schema"] == "mcp-router.eval/1"
    assert report["queries"]["count"] == 12
    (run,) = report["runs"]
    assert run["mode"] == "bm25"
    assert set(run["metrics"]) >= {"recall@5", "all_hit@5", "ndcg@10", "mrr"}
    assert 0.5 < run["metrics"]["recall@10"] <= 1.0
    assert run["latency_ms"]["p50"] > 0
    assert "recall@5" in capsys.readouterr().out


def test_malformed_catalog_is_reported_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(EXAMPLE_CATALOG.read_text() + "{oops\n")
    assert main(["route", "--catalog", str(bad), "--mode", "bm25", "time"]) == 0
    assert f"{bad}:33" in capsys.readouterr().err
    assert main(["route", "--catalog", str(bad), "--mode", "bm25", "--on-error", "stop", "x"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:33" in err and "Traceback" not in err


def test_missing_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["route", "--catalog", str(tmp_path / "nope.jsonl"), "--mode", "bm25", "x"]) == 2
    assert "no such file" in capsys.readouterr().err
