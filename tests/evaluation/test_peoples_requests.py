"""The people's-requests set (benchmarks/data/peoples_requests/): it loads in the dataset
format, every gold tool is in its catalog, its halves are the seeded stratified split of the
whole set, its files are the ones the manifest's sha256 names, and the benchmark writes what
the README section reads. No embedding model is loaded: the smoke run ranks with BM25."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peoples_requests import run, split, table
from benchmarks.suite.readme import replace_between
from router.evaluation.dataset import OnError, load_catalog, load_queries
from router.evaluation.metrics import resolve_gold

DATA = split.DATA


def _ids(name: str) -> list[str]:
    return [str(line["id"]) for line in split.read_lines(DATA / f"{name}.jsonl")]


def _servers(name: str) -> Counter[str]:
    return Counter(str(line["server"]) for line in split.read_lines(DATA / f"{name}.jsonl"))


def test_the_set_loads_and_every_gold_tool_is_in_its_catalog() -> None:
    catalog, catalog_problems = load_catalog(DATA / "catalog.jsonl", OnError.STOP)
    queries, query_problems = load_queries(DATA / "requests.jsonl", OnError.STOP)
    assert not catalog_problems and not query_problems
    assert len(queries) >= 150
    assert len({q.text for q in queries}) == len(queries), "a request is written twice"
    _, unknown = resolve_gold(catalog, queries)
    assert unknown == 0
    config = json.loads((DATA / "servers.json").read_text(encoding="utf-8"))
    assert set(catalog.servers) == set(config["mcpServers"])


def test_the_halves_are_disjoint_and_together_the_whole_set() -> None:
    dev, test = _ids("dev"), _ids("test")
    assert not set(dev) & set(test)
    assert sorted(dev + test) == sorted(_ids("requests"))


def test_the_halves_are_stratified_by_server() -> None:
    dev, test = _servers("dev"), _servers("test")
    assert set(dev) == set(test) == set(_servers("requests"))
    assert all(abs(dev[server] - test[server]) <= 1 for server in dev)
    assert abs(sum(dev.values()) - sum(test.values())) <= 1


def test_the_halves_are_the_seeded_split_of_the_whole_set_line_for_line() -> None:
    lines = (DATA / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {str(json.loads(line)["id"]): line for line in lines}
    halves = split.split([json.loads(line) for line in lines])
    for name, ids in halves.items():
        assert ids == _ids(name)
        written = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert written == [by_id[identifier] for identifier in ids]


def test_every_file_has_the_sha256_its_manifest_records() -> None:
    recorded = json.loads((DATA / split.MANIFEST).read_text(encoding="utf-8"))
    assert set(recorded["sha256"]) == set(split.RECORDED)
    assert recorded == split.manifest(DATA)


@pytest.mark.processes
def test_the_benchmark_writes_what_the_readme_section_reads(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    out = tmp_path / "dev.json"
    args = ["--split", "dev", "--mode", "bm25", "--no-cache", "--out", str(out), "--no-readme"]
    assert run.main(args) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["queries"]["count"] == len(_ids("dev"))
    (only,) = report["runs"]
    assert set(only["figures"]) == set(run.FIGURES)
    assert all(0 <= f["low"] <= f["mean"] <= f["high"] <= 1 for f in only["figures"].values())
    assert only["groups"]["lang=de"]["count"] == sum(
        1 for line in split.read_lines(DATA / "dev.jsonl") if line["lang"] == "de"
    )
    body = table.markdown({"dev": report})
    assert f"| dev | bm25 | {len(_ids('dev'))} |" in body


def _committed() -> dict[str, dict[str, Any]]:
    reports = {
        name: json.loads(path.read_text(encoding="utf-8"))
        for name in split.SPLITS
        if (path := run.result_path(name)).is_file()
    }
    if not reports:
        pytest.skip("no committed peoples-requests results yet")
    return reports


def test_the_committed_results_rank_the_committed_halves() -> None:
    recorded = json.loads((DATA / split.MANIFEST).read_text(encoding="utf-8"))["sha256"]
    for name, report in _committed().items():
        assert report["queries"]["sha256"] == recorded[f"{name}.jsonl"]
        assert report["catalog"]["sha256"] == recorded["catalog.jsonl"]
        if name == "test":
            assert all("misses" not in one for one in report["runs"]), "the test half lists none"


def test_the_readme_section_is_the_committed_results_rendered() -> None:
    text = table.README.read_text(encoding="utf-8")
    body = table.markdown(_committed())
    assert replace_between(text, table.START, table.END, body) == text
