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
from models.training.teacher import MARGIN, Teacher

WEATHER = [
    ("weather", "get_forecast", "Get the weather forecast for a city for the next days."),
    ("weather", "get_alerts", "Get the severe weather alerts issued for a region."),
    ("maps", "geocode_address", "Turn a street address into latitude and longitude."),
    ("maps", "route_between", "Find a driving route between two places."),
    ("mail", "send_email", "Send an email message to one or more recipients."),
    ("mail", "search_inbox", "Search the inbox for messages matching a query."),
]


@pytest.fixture(autouse=True, scope="module")
def _base_vectors(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The base model's tool vectors (the teacher's) go to a cache of this module's own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCP_ROUTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


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
    first = build(data, tmp_path / "a", SETS, multi_step=200)
    second = build(data, tmp_path / "b", SETS, multi_step=200)
    without = build(data, tmp_path / "c", ("msc_bench", "bfcl"), multi_step=200)

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


@pytest.mark.processes
def test_the_base_model_keeps_an_equivalent_tool_out_of_the_negatives(tmp_path: Path) -> None:
    data = _data(tmp_path / "data")
    # the same forecast under another server and name: a right answer, not a negative
    twin = {
        "server": "weather-now",
        "name": "city_forecast",
        "description": "Get the weather forecast for a city for the coming days.",
    }
    for pool in POOLS:
        rows = _lines(data / pool / "catalog.jsonl")
        _write(data / pool / "catalog.jsonl", [*rows, twin])
    forecast = next(
        r for r in _lines(data / "bfcl" / "catalog.jsonl") if r["name"] == "get_forecast"
    )
    pair = {_tool(twin).text, _tool(forecast).text}
    build(data, tmp_path / "plain", SETS, multi_step=200, teacher=False)
    stats = build(data, tmp_path / "vetted", SETS, multi_step=200, teacher=True)
    plain = _lines(tmp_path / "plain" / "triplets.jsonl")
    vetted = _lines(tmp_path / "vetted" / "triplets.jsonl")

    def twins(triplets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The triplets asking for one of the two forecasts against the other, by a request
        that does not name the twin's server (one that does tells the two apart)."""
        return [
            t
            for t in triplets
            if t["positive"] in pair and t["negative"] in pair and "weather now" not in t["query"]
        ]

    assert twins(plain)  # BM25 alone takes each for the other's negative
    assert not twins(vetted)
    assert any(t["positive"] in pair for t in vetted)
    assert stats["teacher"] == {"model": "all-MiniLM-L6-v2", "margin": MARGIN}
    # every kept negative from another server scores under the margin of its positive, as
    # the base model sees it (a sibling may be as close as it likes: enable / disable)
    rows = _lines(data / "msc_bench" / "catalog.jsonl") + _lines(data / POOLS[0] / "catalog.jsonl")
    server = {_tool(raw).text: raw["server"] for raw in rows}
    vetted = [t for t in vetted if server[t["positive"]] != server[t["negative"]]]
    assert vetted
    texts = sorted({t["positive"] for t in vetted} | {t["negative"] for t in vetted})
    teacher = Teacher(texts)
    row = {text: i for i, text in enumerate(texts)}
    queries = teacher.queries([t["query"] for t in vetted])
    for vector, triplet in zip(queries, vetted, strict=True):
        positive = float(vector @ teacher.tools[row[triplet["positive"]]])
        negative = float(vector @ teacher.tools[row[triplet["negative"]]])
        assert negative < MARGIN * positive
