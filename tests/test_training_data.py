"""The tool-search model's training set: built only from dev halves, with hard negatives that
are never a gold tool, the same bytes from the same inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bm25s")

from benchmarks.suite.data import POOLS, half
from models.training.data import SETS, _tool, build, synthetic_queries

WEATHER = [
    ("weather", "get_forecast", "Get the weather forecast for a city for the next days."),
    ("weather", "get_alerts", "Get the severe weather alerts issued for a region."),
    ("maps", "geocode_address", "Turn a street address into latitude and longitude."),
    ("maps", "route_between", "Find a driving route between two places."),
    ("mail", "send_email", "Send an email message to one or more recipients."),
    ("mail", "search_inbox", "Search the inbox for messages matching a query."),
]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _data(root: Path) -> Path:
    tools = [
        {
            "server": server,
            "name": name,
            "description": text,
            "inputSchema": {
                "type": "object",
                "properties": {"place": {"type": "string", "description": "The place to use"}},
                "required": ["place"],
            },
        }
        for server, name, text in WEATHER
    ]
    phrasings = [
        "what will the weather be in {}",
        "any storm warnings for {}",
        "coordinates of {}",
        "how do I drive to {}",
        "email my boss about {}",
        "find the mail about {}",
    ]
    cities = ["Oslo", "Lima", "Kyoto", "Accra", "Perth", "Quito", "Turin", "Hanoi"]
    for name in SETS:
        queries = [
            {
                "id": f"{name}-{i}-{j}",
                "query": phrasing.format(city),
                "gold": [{"server": tools[i]["server"], "name": tools[i]["name"]}],
                "gold_groups": [[{"server": tools[i]["server"], "name": tools[i]["name"]}]],
            }
            for i, phrasing in enumerate(phrasings)
            for j, city in enumerate(cities)
        ]
        _write(root / name / "catalog.jsonl", tools)
        _write(root / name / "queries.jsonl", queries)
    pool_tools = [
        {
            "server": "forecasts-r-us",
            "name": "hourly_forecast",
            "description": "Hourly weather forecast for a town, hour by hour.",
        },
        {
            "server": "postbox",
            "name": "compose_mail",
            "description": "Compose and send a mail message.",
        },
    ]
    for pool in POOLS:
        _write(root / pool / "catalog.jsonl", pool_tools)
    return root


def test_only_dev_half_queries_go_in_and_negatives_are_never_gold(tmp_path: Path) -> None:
    data = _data(tmp_path / "data")
    stats = build(data, tmp_path / "out", SETS)
    triplets = _lines(tmp_path / "out" / "triplets.jsonl")

    real = [t for t in triplets if not t["source"].startswith("pools")]
    test_texts = {
        row["query"]
        for name in SETS
        for row in _lines(data / name / "queries.jsonl")
        if half(name, row["id"]) == "test"
    }
    dev_texts = {
        row["query"]
        for name in SETS
        for row in _lines(data / name / "queries.jsonl")
        if half(name, row["id"]) == "dev"
    }
    assert real and all(t["query"] in dev_texts for t in real)
    assert not any(t["query"] in test_texts - dev_texts for t in triplets)
    assert all(t["negative"] != t["positive"] for t in triplets)
    assert stats["triplets"] == len(triplets)
    assert stats["by_source"]["pools-synthetic"] > 0


def test_the_same_inputs_give_the_same_bytes_and_a_set_can_be_left_out(tmp_path: Path) -> None:
    data = _data(tmp_path / "data")
    first = build(data, tmp_path / "a", SETS)
    second = build(data, tmp_path / "b", SETS)
    without = build(data, tmp_path / "c", ("msc_bench", "bfcl"))

    assert first["sha256"] == second["sha256"]
    assert "metatool-dev" not in without["by_source"]
    assert "metatool/queries.jsonl" not in without["inputs"]
    # a left-out set's tools are not even negatives: its catalog is not read
    assert "metatool/catalog.jsonl" not in without["inputs"]


def test_synthetic_queries_come_from_the_tools_own_words() -> None:
    tool = _tool(
        {
            "server": "weather-server",
            "name": "get_forecast",
            "description": "This tool gets the weather forecast for a city. It is fast.",
            "inputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city to forecast"}},
                "required": ["city"],
            },
        }
    )
    assert synthetic_queries(tool) == [
        "gets the weather forecast for a city",
        "get forecast in weather server",
        "get forecast for the city to forecast",
    ]
