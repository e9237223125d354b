"""The READMEs' generated sections are their committed result files rendered: no figure in
them is typed by hand. (The perf sections are checked in `test_perf_quick.py`.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import (
    backend_parity,
    code_mode,
    eval_sets,
    forwarding_latency,
    lazy_start,
    length_bias,
    listing_tokens,
    model_experiment,
    model_tables,
    names_beyond,
    no_match,
    rerank,
    server_signal,
)
from benchmarks.suite import cli as bench_cli
from benchmarks.suite import readme
from router.accounting.tokens import TokenCounter
from router.config.defaults import DEFAULT_NAME_LINE_CHARS, DEFAULT_NAMES_AFTER_K
from router.core.catalog import Catalog, ToolSpec

RESULTS = listing_tokens.HERE / "results"


def _result(name: str) -> dict[str, Any]:
    path = RESULTS / name
    if not path.is_file():
        pytest.skip(f"no committed {name} yet")
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _in_sync(readme_path: Path, start: str, end: str, body: str) -> bool:
    text = readme_path.read_text(encoding="utf-8")
    return readme.replace_between(text, start, end, body) == text


@pytest.mark.parametrize(
    ("readme_path", "render"),
    [
        (listing_tokens.README, listing_tokens.summary),
        (listing_tokens.BENCH_README, listing_tokens.markdown),
    ],
    ids=["README", "bench"],
)
def test_listing_tokens_sections_are_the_committed_result_rendered(
    readme_path: Path, render: Any
) -> None:
    body = render(_result("listing-tokens.json"))
    assert _in_sync(readme_path, listing_tokens.START, listing_tokens.END, body)


def test_listing_tokens_counts_agree_with_their_breakdown() -> None:
    result = _result("listing-tokens.json")
    mcp, parts = result["tokens"]["mcp"], result["mcp_all_tools_breakdown"]
    assert mcp["direct_all_tools"] == parts["servers_own_lists_summed"]
    assert mcp["router_all_tools"] == parts["router_entries_qualified_names_one_list"]
    assert result["tool_count"] == sum(result["servers"].values())


@pytest.mark.parametrize("readme_path", [code_mode.README, code_mode.BENCH_README])
def test_code_mode_sections_are_the_committed_result_rendered(readme_path: Path) -> None:
    body = code_mode.markdown(_result("code-mode.json"))
    assert _in_sync(readme_path, code_mode.START, code_mode.END, body)


def test_lazy_start_section_is_the_committed_result_rendered() -> None:
    body = lazy_start.markdown(_result("lazy-start.json"))
    assert _in_sync(lazy_start.README, lazy_start.START, lazy_start.END, body)


def test_model_tables_are_the_committed_results_rendered() -> None:
    compare, loso = _result(model_tables.COMPARE.name), _result(model_tables.LOSO.name)
    text = model_tables.README.read_text(encoding="utf-8")
    assert model_tables.render(text, compare, loso) == text


def test_bench_section_is_the_committed_result_rendered() -> None:
    report = _result("bench.json")
    charts = sorted(RESULTS.glob("bench-*.png"))
    body = readme.section(report, charts, bench_cli.README)
    assert _in_sync(bench_cli.README, readme.START, readme.END, body)
    assert (RESULTS / "bench.md").read_text(encoding="utf-8") == body + "\n"


def test_parity_section_is_the_committed_result_rendered() -> None:
    body = backend_parity.table(_result("backend-parity.json"))
    assert _in_sync(backend_parity.README, backend_parity.START, backend_parity.END, body)


def test_eval_section_is_the_committed_result_rendered() -> None:
    reports = [_result(f"eval-{name}.json") for name in eval_sets.SETS]
    _result("eval-run.json")
    body = f"{eval_sets.describe_run(reports)}\n\n{eval_sets.table(reports)}"
    assert _in_sync(eval_sets.README, eval_sets.START, eval_sets.END, body)


def test_breakdown_takes_the_servers_lists_apart_step_by_step() -> None:
    time_tool: dict[str, Any] = {
        "name": "now",
        "description": "The current time.",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "forbidden"},
    }
    echo_tool: dict[str, Any] = {
        "name": "echo",
        "description": "Echo a message.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
    }
    own: dict[str, tuple[dict[str, Any], ...]] = {"time": (time_tool,), "everything": (echo_tool,)}
    catalog = Catalog.from_specs(
        ToolSpec(server, e["name"], e["description"], e["inputSchema"])
        for server, entries in own.items()
        for e in entries
    )
    listings = listing_tokens.Listings(
        catalog=catalog.records,
        own_lists=own,
        default=(),
        routed={},
        tools_per_server={"time": 1, "everything": 1},
        server_info={},
    )
    counter = TokenCounter()
    parts = listing_tokens.breakdown(listings, counter)
    assert parts["fields_not_relayed"] == {"execution": 1}
    assert parts["fields_added_by_router"] == {}
    # without the field the router drops, the servers' entries are the router's own-name ones
    assert (
        parts["servers_entries_one_list_relayed_fields_only"]
        == parts["router_entries_own_names_one_list"]
    )
    assert parts["servers_own_lists_summed"] > parts["servers_entries_one_list"]
    assert parts["servers_entries_one_list"] > parts["servers_entries_one_list_relayed_fields_only"]
    assert (
        parts["router_entries_qualified_names_one_list"]
        > parts["router_entries_own_names_one_list"]
    )


def test_no_match_section_is_its_result_rendered() -> None:
    result = _result("no-match.json")
    body = no_match.markdown(result)
    assert _in_sync(no_match.README, no_match.START, no_match.END, body)


def test_names_beyond_section_is_its_result_rendered() -> None:
    report = _result("names-beyond.json")
    assert report["summary"] == names_beyond.summarise(report)  # the choice is the figures'
    body = names_beyond.markdown(report)
    assert _in_sync(names_beyond.README, names_beyond.START, names_beyond.END, body)


def test_the_default_names_after_k_is_the_one_measured() -> None:
    report = _result("names-beyond.json")
    assert report["summary"]["chosen"] == DEFAULT_NAMES_AFTER_K
    assert report["line_chars"] == DEFAULT_NAME_LINE_CHARS


def test_length_bias_section_is_its_result_rendered() -> None:
    report = _result("length-bias.json")
    assert report["summary"] == length_bias.summarise(report)  # the choice is the figures'
    body = length_bias.markdown(report)
    assert _in_sync(length_bias.README, length_bias.START, length_bias.END, body)


def test_server_signal_section_is_its_result_rendered() -> None:
    report = _result("server-signal.json")
    body = server_signal.markdown(report)
    assert _in_sync(server_signal.README, server_signal.START, server_signal.END, body)


def test_forwarding_latency_section_is_its_result_rendered() -> None:
    report = _result("forwarding-latency.json")
    body = forwarding_latency.markdown(report)
    assert _in_sync(
        forwarding_latency.README, forwarding_latency.START, forwarding_latency.END, body
    )


def test_rerank_section_is_its_result_rendered() -> None:
    report = _result("rerank.json")
    assert _in_sync(rerank.README, rerank.START, rerank.END, rerank.markdown(report))


def test_model_experiment_section_is_its_result_rendered() -> None:
    report = _result("model-real-requests-goals.json")
    body = model_experiment.markdown(report)
    assert _in_sync(server_signal.README, model_experiment.START, model_experiment.END, body)
