"""Requests in users' words for the tool-search model: the goal a tool's verb stands for and
its object, never the tool's own verb, the same from the same seed, and only when asked for."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from models.training.goals import goal_object, goal_request


def test_the_object_comes_from_the_name_else_from_the_description() -> None:
    assert goal_object("create_issue", "github", "") == ("create", "issue")
    assert goal_object("deleteBranch", "git-server", "") == ("delete", "branch")
    # the name is all verb and server: the description's first clause gives the object
    assert goal_object("git_add", "git", "adds file contents to the staging area") == (
        "add",
        "file contents to the staging area",
    )
    assert goal_object("base64_decode", "crypto", "decode a string") is None


def test_a_goal_request_names_the_object_but_not_the_tools_verb() -> None:
    properties = [("title", {"type": "string", "description": "The issue's title"})]
    made = {
        goal_request("create_issue", "github", "", properties, random.Random(seed))
        for seed in range(60)
    }
    assert all(r and "issue" in r and "create" not in r for r in made)
    assert len(made) > 5
    assert any("on github" in (r or "") or "in github" in (r or "") for r in made)
    assert any("title" in (r or "") for r in made)  # some carry an argument value
    first = goal_request("create_issue", "github", "", properties, random.Random(7))
    assert first == goal_request("create_issue", "github", "", properties, random.Random(7))


def test_goal_requests_join_the_triplets_only_when_asked_for(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    from benchmarks.suite.data import POOLS
    from models.training.data import build

    data = tmp_path / "data"

    def write(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    tool = {"server": "maps", "name": "geocode", "description": "Turn an address into places."}
    write(data / "bfcl" / "catalog.jsonl", [tool])
    gold = [{"server": "maps", "name": "geocode"}]
    write(data / "bfcl" / "queries.jsonl", [{"id": "q1", "query": "where is it", "gold": gold}])
    pool = [
        {"server": "github", "name": "create_issue", "description": "Create a new issue."},
        {"server": "github", "name": "delete_branch", "description": "Delete a branch."},
        {"server": "notes", "name": "list_notes", "description": "List the saved notes."},
    ]
    for name in POOLS:
        write(data / name / "catalog.jsonl", pool)

    plain = build(data, tmp_path / "plain", ["bfcl"], multi_step=0)
    worded = build(data, tmp_path / "worded", ["bfcl"], multi_step=0, goals=True)
    assert "pools-goals" not in plain["by_source"] and "goals" not in plain
    assert worded["by_source"]["pools-goals"] > 0 and worded["goals"] is True
    lines = (tmp_path / "worded" / "triplets.jsonl").read_text(encoding="utf-8").splitlines()
    said = [json.loads(line)["query"] for line in lines]
    assert any("issue" in q and "create" not in q for q in said)
