from pathlib import Path

import pytest

from router.core.errors import DataError
from router.evaluation.dataset import OnError, load_catalog, load_queries

GOOD_TOOL = '{"server": "s", "name": "t", "description": "d", "inputSchema": null}'


def _write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_malformed_lines_are_reported_with_line_numbers_and_skipped(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "catalog.jsonl",
        GOOD_TOOL,
        "{not json",
        '{"server": "s"}',
        "",
        '["a list"]',
        '{"server": "s", "name": "u", "inputSchema": "nope"}',
    )
    catalog, problems = load_catalog(path)
    assert len(catalog) == 1
    assert [p.line for p in problems] == [2, 3, 5, 6]
    assert "name" in problems[1].message
    assert str(problems[0]).startswith(f"{path}:2: ")


def test_stop_on_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "catalog.jsonl", GOOD_TOOL, "{not json")
    with pytest.raises(DataError, match=r"catalog\.jsonl:2:"):
        load_catalog(path, OnError.STOP)


def test_missing_and_empty_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        load_catalog(tmp_path / "absent.jsonl")
    with pytest.raises(DataError, match="no tools"):
        load_catalog(_write(tmp_path, "empty.jsonl", ""))
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DataError, match="UTF-8"):
        load_catalog(binary)


def test_queries_take_gold_groups_or_fall_back_to_gold(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "queries.jsonl",
        '{"id": "a", "query": "q", "gold_groups": [[{"server": "s", "name": "t"},'
        ' {"server": "s2", "name": "t"}]], "level": 3}',
        '{"id": 7, "query": "q", "gold": [{"server": "s", "name": "t"},'
        ' {"server": "s", "name": "u"}]}',
        '{"id": "c", "query": "q", "gold": []}',
        '{"id": "d", "query": "", "gold": [{"server": "s", "name": "t"}]}',
    )
    queries, problems = load_queries(path)
    assert [q.id for q in queries] == ["a", "7"]
    assert queries[0].gold_groups == ((("s", "t"), ("s2", "t")),)
    assert queries[0].field("level") == "3"
    assert queries[1].gold_groups == ((("s", "t"),), (("s", "u"),))
    assert [p.line for p in problems] == [3, 4]
