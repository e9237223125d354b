"""The people's-requests sets (benchmarks/data/peoples_requests/ and, issue 50's second,
benchmarks/data/peoples_requests_2/): each loads in the dataset format, every gold tool is
in its catalog, its halves are the seeded stratified split of the whole set, its files are
the ones the manifest's sha256 names, and the benchmark writes what the README section
reads. No embedding model is loaded: the smoke run ranks with BM25."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peoples_requests import run, second, split, table
from benchmarks.suite.readme import replace_between
from router.evaluation.dataset import OnError, load_catalog, load_queries
from router.evaluation.metrics import resolve_gold

DATA = split.DATA
SETS = {"first": (split.DATA, split.RECORDED), "second": (second.DATA, second.RECORDED)}
"""Each set's folder and the files its manifest records."""


@pytest.fixture(params=sorted(SETS))
def people(request: pytest.FixtureRequest) -> tuple[Path, tuple[str, ...]]:
    return SETS[request.param]


def _ids(name: str, data: Path = DATA) -> list[str]:
    return [str(line["id"]) for line in split.read_lines(data / f"{name}.jsonl")]


def _servers(name: str, data: Path) -> Counter[str]:
    return Counter(str(line["server"]) for line in split.read_lines(data / f"{name}.jsonl"))


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


def test_the_second_set_loads_on_other_servers_than_the_first() -> None:
    """Issue 50, item 5: at least 120 requests, every gold tool in its catalog, every server
    of `sources.json` there and none of the first set's."""
    catalog, catalog_problems = load_catalog(second.DATA / "catalog.jsonl", OnError.STOP)
    queries, query_problems = load_queries(second.DATA / "requests.jsonl", OnError.STOP)
    assert not catalog_problems and not query_problems
    assert len(queries) >= 120
    assert len({q.text for q in queries}) == len(queries), "a request is written twice"
    _, unknown = resolve_gold(catalog, queries)
    assert unknown == 0
    sources = json.loads((second.DATA / "sources.json").read_text(encoding="utf-8"))
    assert set(catalog.servers) == set(sources["servers"])
    first, _ = load_catalog(DATA / "catalog.jsonl", OnError.STOP)
    assert not set(catalog.servers) & set(first.servers)


def test_the_halves_are_disjoint_and_together_the_whole_set(
    people: tuple[Path, tuple[str, ...]],
) -> None:
    data, _ = people
    dev, test = _ids("dev", data), _ids("test", data)
    assert not set(dev) & set(test)
    assert sorted(dev + test) == sorted(_ids("requests", data))


def test_the_halves_are_stratified_by_server(people: tuple[Path, tuple[str, ...]]) -> None:
    data, _ = people
    dev, test = _servers("dev", data), _servers("test", data)
    assert set(dev) == set(test) == set(_servers("requests", data))
    assert all(abs(dev[server] - test[server]) <= 1 for server in dev)
    assert abs(sum(dev.values()) - sum(test.values())) <= 1


def test_the_halves_are_the_seeded_split_of_the_whole_set_line_for_line(
    people: tuple[Path, tuple[str, ...]],
) -> None:
    data, _ = people
    lines = (data / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {str(json.loads(line)["id"]): line for line in lines}
    halves = split.split([json.loads(line) for line in lines])
    for name, ids in halves.items():
        assert ids == _ids(name, data)
        written = (data / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert written == [by_id[identifier] for identifier in ids]


def test_every_file_has_the_sha256_its_manifest_records(
    people: tuple[Path, tuple[str, ...]],
) -> None:
    data, recorded_files = people
    recorded = json.loads((data / split.MANIFEST).read_text(encoding="utf-8"))
    assert set(recorded["sha256"]) == set(recorded_files)
    assert recorded == split.manifest(data, recorded_files)


@pytest.mark.processes
@pytest.mark.parametrize("second_set", [False, True])
def test_the_benchmark_writes_what_the_readme_section_reads(
    tmp_path: Path, second_set: bool
) -> None:
    pytest.importorskip("bm25s")
    data = second.DATA if second_set else DATA
    out = tmp_path / "dev.json"
    args = ["--split", "dev", "--mode", "bm25", "--no-cache", "--out", str(out), "--no-readme"]
    assert run.main(args + (["--second"] if second_set else [])) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["queries"]["count"] == len(_ids("dev", data))
    assert report["catalog"]["path"].startswith(f"benchmarks/data/{data.name}/")
    (only,) = report["runs"]
    assert set(only["figures"]) == set(run.FIGURES)
    assert all(0 <= f["low"] <= f["mean"] <= f["high"] <= 1 for f in only["figures"].values())
    assert only["groups"]["lang=de"]["count"] == sum(
        1 for line in split.read_lines(data / "dev.jsonl") if line["lang"] == "de"
    )
    body = table.markdown({"dev": report})
    assert f"| dev | bm25 | {len(_ids('dev', data))} |" in body


def _committed(second_set: bool = False) -> dict[str, dict[str, Any]]:
    reports = {
        name: json.loads(path.read_text(encoding="utf-8"))
        for name in split.SPLITS
        if (path := run.result_path(name, second_set)).is_file()
    }
    if not reports:
        pytest.skip("no committed peoples-requests results yet")
    return reports


@pytest.mark.parametrize("second_set", [False, True])
def test_the_committed_results_rank_the_committed_halves(second_set: bool) -> None:
    data = second.DATA if second_set else DATA
    recorded = json.loads((data / split.MANIFEST).read_text(encoding="utf-8"))["sha256"]
    for name, report in _committed(second_set).items():
        assert report["queries"]["sha256"] == recorded[f"{name}.jsonl"]
        assert report["catalog"]["sha256"] == recorded["catalog.jsonl"]
        if name == "test":
            assert all("misses" not in one for one in report["runs"]), "the test half lists none"


@pytest.mark.parametrize("second_set", [False, True])
def test_the_readme_section_is_the_committed_results_rendered(second_set: bool) -> None:
    text = table.README.read_text(encoding="utf-8")
    body = table.markdown(_committed(second_set))
    markers = table.SECOND if second_set else (table.START, table.END)
    assert replace_between(text, *markers, body) == text
