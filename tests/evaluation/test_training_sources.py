"""The public request sets for the tool-search model's training data: each converter turns
its set's own raw files into the dataset format, a test split never reaches the training
folder, a file of another version is refused, and `--real-requests` adds the converted
queries to the triplets under their own source."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from models.training.sources.build import SourceError, build
from models.training.sources.reading import read_sets
from router.evaluation.dataset import OnError, load_catalog, load_queries


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _schema(*services: tuple[str, list[str]]) -> list[dict[str, Any]]:
    return [
        {
            "service_name": service,
            "description": f"{service.split('_')[0]} search and booking",
            "slots": [
                {"name": "city", "description": "City to look in", "is_categorical": False},
                {
                    "name": "price",
                    "description": "Price range",
                    "is_categorical": True,
                    "possible_values": ["cheap", "moderate"],
                },
            ],
            "intents": [
                {
                    "name": intent,
                    "description": f"{intent} at a restaurant",
                    "required_slots": ["city"],
                    "optional_slots": {"price": "dontcare"},
                }
                for intent in intents
            ],
        }
        for service, intents in services
    ]


def _turn(service: str, text: str, intent: str | None = None) -> dict[str, Any]:
    acts = [{"act": "INFORM_INTENT", "canonical_values": [intent]}] if intent else []
    return {"speaker": "USER", "utterance": text, "frames": [{"service": service, "actions": acts}]}


def _sgd(root: Path) -> None:
    _write_json(
        root / "train" / "schema.json",
        _schema(("Restaurants_1", ["FindRestaurants", "ReserveRestaurant"]), ("Restaurants_2", [])),
    )
    turns = [
        _turn(
            "Restaurants_1", "I'm starving, find me somewhere to eat in San Jose", "FindRestaurants"
        ),
        {"speaker": "SYSTEM", "utterance": "How about Bazille?", "frames": []},
        # the service's second intent leans on the dialogue: not a request on its own
        _turn("Restaurants_1", "That sounds good, I'd like to reserve it", "ReserveRestaurant"),
    ]
    _write_json(root / "train" / "dialogues_001.json", [{"dialogue_id": "1_0", "turns": turns}])
    _write_json(root / "test" / "schema.json", _schema(("Restaurants_1", ["FindRestaurants"])))
    test_turns = [_turn("Restaurants_1", "test only: a table near the lake", "FindRestaurants")]
    _write_json(root / "test" / "dialogues_001.json", [{"dialogue_id": "9_0", "turns": test_turns}])


def _seal_tools(root: Path) -> None:
    tools = [
        {
            "api_name": name,
            "api_description": text,
            "field": field,
            "parameters": {"crop": {"type": "str", "description": "The crop"}},
            "required": ["crop"],
        }
        for name, text, field in [
            ("getWaterNeeds", "Get the water a crop needs", "Agriculture/Irrigation"),
            ("getPlantGrowth", "Get how a plant grows in space", "Space Exploration/Biology"),
        ]
    ]
    _write_lines(root / "Seal-Tools_Dataset" / "tool.jsonl", tools)
    query = "How much water do soybeans need, and how do they grow in space?"
    calls = [{"api": "getWaterNeeds"}, {"api": "getPlantGrowth"}, {"api": "getWaterNeeds"}]
    _write_lines(
        root / "Seal-Tools_Dataset" / "dev.jsonl",
        [{"id": "dev-difficult-0", "query": query, "calling": calls}],
    )


def _api_bank(root: Path) -> None:
    found = (
        "{'name': 'DentalCostEstimator', 'description': 'API for estimating the cost of a dental"
        " procedure.', 'input_parameters': {'procedure': {'type': 'str', 'description': 'The"
        " procedure.'}}, 'output_parameters': {}}"
    )
    request = "\nUser: What would a root canal cost me in Los Angeles?TIME: 2034-04-15 10:00:00\n"
    steps = [
        {
            "input": request + "Generate API Request: ",
            "output": "API-Request: [ToolSearcher(keywords='dental cost')]",
        },
        {
            "input": f"{request}API-Request: [ToolSearcher(keywords='dental cost')]->{found}\n",
            "output": "API-Request: [DentalCostEstimator(procedure='root canal')]",
        },
    ]
    _write_json(root / "api-bank" / "training-data" / "lv3-api-train.json", steps)


def _raw(tmp_path: Path) -> tuple[Path, Path]:
    """Raw files of each set in its own layout, and a manifest that pins them."""
    raw = tmp_path / "raw"
    _sgd(raw / "sgd")
    _seal_tools(raw / "seal_tools")
    _api_bank(raw / "api_bank")
    splits: dict[str, dict[str, list[str]]] = {
        "sgd": {
            "train": ["train/schema.json", "train/dialogues_001.json"],
            "test": ["test/schema.json", "test/dialogues_001.json"],
        },
        "seal_tools": {
            "shared": ["Seal-Tools_Dataset/tool.jsonl"],
            "dev": ["Seal-Tools_Dataset/dev.jsonl"],
        },
        "api_bank": {"train": ["api-bank/training-data/lv3-api-train.json"]},
    }
    sets = {
        name: {
            "repository": f"https://example.com/{name}",
            "commit": "0" * 40,
            "licence": "Apache-2.0",
            "files": {
                split: {
                    path: {"sha256": hashlib.sha256((raw / name / path).read_bytes()).hexdigest()}
                    for path in paths
                }
                for split, paths in by_split.items()
            },
        }
        for name, by_split in splits.items()
    }
    manifest = tmp_path / "manifest.json"
    _write_json(manifest, {"sets": sets})
    return raw, manifest


def test_each_converter_turns_its_sets_raw_files_into_the_dataset_format(tmp_path: Path) -> None:
    raw, manifest = _raw(tmp_path)
    out, tested = tmp_path / "out", tmp_path / "test"
    result = build(raw, out, ["sgd", "seal_tools", "api_bank"], tested, manifest=manifest)

    for name in ("sgd", "seal_tools", "api_bank"):
        catalog, problems = load_catalog(out / name / "catalog.jsonl", OnError.STOP)
        queries, _ = load_queries(out / name / "queries.jsonl", OnError.STOP)
        assert not problems
        keys = {tool.key for tool in catalog}
        assert all(key in keys for q in queries for group in q.gold_groups for key in group)

    sgd = _lines(out / "sgd" / "queries.jsonl")
    assert [q["query"] for q in sgd] == ["I'm starving, find me somewhere to eat in San Jose"]
    assert sgd[0]["gold"] == [{"server": "Restaurants_1", "name": "FindRestaurants"}]
    assert sgd[0]["split"] == "train"
    tool = next(t for t in _lines(out / "sgd" / "catalog.jsonl") if t["name"] == "FindRestaurants")
    assert tool["inputSchema"]["required"] == ["city"]
    assert tool["inputSchema"]["properties"]["price"]["enum"] == ["cheap", "moderate"]
    assert tool["server_description"] == "Restaurants search and booking"

    # a test split goes to its own folder only, with its own catalog
    assert "test only" not in (out / "sgd" / "queries.jsonl").read_text(encoding="utf-8")
    assert [q["split"] for q in _lines(tested / "sgd" / "queries.jsonl")] == ["test"]
    assert result["sets"]["sgd"]["splits"]["test"]["queries"] == 1

    (seal,) = _lines(out / "seal_tools" / "queries.jsonl")
    # one group per API called, in the order called, each once; a field's first part serves
    assert seal["gold_groups"] == [
        [{"server": "Agriculture", "name": "getWaterNeeds"}],
        [{"server": "Space Exploration", "name": "getPlantGrowth"}],
    ]
    (bank,) = _lines(out / "api_bank" / "queries.jsonl")
    assert bank["query"] == "What would a root canal cost me in Los Angeles?"
    assert bank["gold"] == [{"server": "api-bank", "name": "DentalCostEstimator"}]
    assert result["sets"]["api_bank"]["splits"]["train"] == {"tools": 1, "queries": 1, "pairs": 1}


def test_a_raw_file_of_another_version_is_refused(tmp_path: Path) -> None:
    raw, manifest = _raw(tmp_path)
    dev = raw / "seal_tools" / "Seal-Tools_Dataset" / "dev.jsonl"
    dev.write_text(dev.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"dev\.jsonl: sha256"):
        build(raw, tmp_path / "out", ["seal_tools"], manifest=manifest)


def test_real_requests_join_the_triplets_under_their_own_source(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    from benchmarks.suite.data import POOLS
    from models.training.data import build as build_triplets

    raw, manifest = _raw(tmp_path)
    converted = tmp_path / "converted"
    build(raw, converted, ["sgd", "seal_tools", "api_bank"], tmp_path / "test", manifest=manifest)
    data = tmp_path / "data"
    tool = {"server": "maps", "name": "geocode", "description": "Turn an address into places."}
    _write_lines(data / "bfcl" / "catalog.jsonl", [tool])
    gold = [{"server": "maps", "name": "geocode"}]
    rows = [{"id": f"q{i}", "query": f"where is street {i}", "gold": gold} for i in range(8)]
    _write_lines(data / "bfcl" / "queries.jsonl", rows)
    pool = [
        {"server": "eats", "name": "book_table", "description": "Book a table at a restaurant."},
        {"server": "farm", "name": "soil_report", "description": "Report on a field's soil."},
    ]
    for name in POOLS:
        _write_lines(data / name / "catalog.jsonl", pool)

    stats = build_triplets(data, tmp_path / "out", ["bfcl"], multi_step=0, real_requests=converted)
    triplets = _lines(tmp_path / "out" / "triplets.jsonl")

    by_source = stats["by_source"]
    assert by_source["sgd-train"] == 1
    assert by_source["seal_tools-dev"] == 2  # one triplet per API the request needs
    assert by_source["api_bank-train"] == 1
    texts = {t["query"] for t in triplets if t["source"].startswith(("sgd", "seal", "api"))}
    assert "I'm starving, find me somewhere to eat in San Jose" in texts
    assert not any("test only" in t["query"] for t in triplets)
    assert stats["real_requests"]["sets"]["sgd"]["licence"] == "Apache-2.0"
    assert "real-requests/sgd/queries.jsonl" in stats["inputs"]
    left_out = build_triplets(
        data,
        tmp_path / "out2",
        ["bfcl"],
        multi_step=0,
        real_requests=converted,
        real_sets=["sgd"],
    )
    assert "seal_tools-dev" not in left_out["by_source"]
    # a test-split query put among the training sets by hand is refused
    (converted / "sgd" / "queries.jsonl").write_text(
        (tmp_path / "test" / "sgd" / "queries.jsonl").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="test-split"):
        read_sets(converted, ["sgd"])
