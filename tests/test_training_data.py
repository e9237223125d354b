"""The tool-search model's training set: built only from dev halves, with hard negatives that
are never a gold tool, the same bytes from the same inputs."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bm25s")

from benchmarks.suite.data import POOLS, half
from models.training.arguments import argument_request, parameter_value
from models.training.data import SETS, _tool, as_request, build, synthetic_queries
from models.training.steps import Step, multi_step_requests

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


def test_argument_requests_carry_values_each_parameter_offers_or_its_type_implies() -> None:
    tool = _tool(
        {
            "server": "geometry",
            "name": "triangle_area",
            "description": "Find the area of a triangle.\nMore text on a second line.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "options": {"type": "object"},
                    "unit": {"type": "string", "enum": ["cm", "inch"]},
                    "base": {"type": "integer", "description": "The base"},
                    "height": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                },
                "required": ["base", "height"],
            },
        }
    )
    # required parameters come first; a parameter no user types a value for never shows
    assert [name for name, _ in tool.properties][:2] == ["base", "height"]
    requests = {
        argument_request(as_request(tool), tool.properties, random.Random(s)) for s in range(40)
    }
    assert all(r and r.startswith("find the area of a triangle") for r in requests)
    assert not any("options" in (r or "") or "second line" in (r or "") for r in requests)
    assert any(re.search(r"base (is )?\d+", r or "") for r in requests)
    assert any(re.search(r"unit (is )?(cm|inch)", r or "") for r in requests)
    # the same generator state gives the same request
    first = argument_request(as_request(tool), tool.properties, random.Random(7))
    assert first == argument_request(as_request(tool), tool.properties, random.Random(7))


def test_parameter_values_follow_what_the_parameter_holds() -> None:
    rng = random.Random(1)
    assert parameter_value("flag", {"type": "boolean"}, rng) is None
    assert parameter_value("tags", {"type": "array"}, rng) is None
    assert parameter_value("limit", {"type": "integer", "default": 20}, rng) == "20"
    assert parameter_value("mode", {"type": "string", "examples": ["fast"]}, rng) == "fast"
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d|next Monday|yesterday", parameter_value("start_date", {}, rng) or ""
    )
    assert "@" in (parameter_value("userEmail", {"type": "string"}, rng) or "")
    assert (parameter_value("note", {"type": "string"}, rng) or "").startswith("'")


def test_multi_step_requests_join_several_tools_and_keep_every_step_out_of_the_negatives(
    tmp_path: Path,
) -> None:
    steps = [
        Step(("bank", "get_balance"), "check my balance"),
        Step(("bank", "send_money"), "send 5 dollars to Bob"),
        Step(("chain", "list_blocks"), "list the latest blocks"),
        Step(("news", "search_news"), "search news about the port"),
    ]
    made = multi_step_requests(steps, 50, random.Random(3))
    assert len(made) >= 40
    for text, positive, keys in made:
        assert 2 <= len(keys) <= 4 and positive.key in keys
        named = [s for s in steps if s.request in text]
        assert {s.key for s in named} == keys
    assert made == multi_step_requests(steps, 50, random.Random(3))

    data = _data(tmp_path / "data")
    pool = [
        {
            "server": "bank",
            "name": name,
            "description": text,
            "inputSchema": {"type": "object", "properties": {"amount": {"type": "number"}}},
        }
        for name, text in [
            ("get_balance", "Get the balance of an account."),
            ("send_money", "Send money from an account to a person."),
            ("list_payees", "List the payees saved on an account."),
        ]
    ]
    for name in POOLS:
        _write(data / name / "catalog.jsonl", pool)
    stats = build(data, tmp_path / "out", SETS, multi_step=30, arguments=True)
    joined = [
        t for t in _lines(tmp_path / "out" / "triplets.jsonl") if t["source"] == "pools-multi-step"
    ]
    assert stats["by_source"]["pools-multi-step"] == len(joined) > 0
    assert stats["by_source"]["pools-arguments"] > 0
    tools = [_tool({**raw, "server": "bank"}) for raw in pool]
    for triplet in joined:
        # no step of the request is its negative: each of them is a right answer
        steps_named = [t for t in tools if as_request(t) in triplet["query"].lower()]
        assert len(steps_named) >= 2
        assert triplet["positive"] in {t.text for t in steps_named}
        assert triplet["negative"] not in {t.text for t in steps_named}
