"""The Schema-Guided Dialogue dataset (SGD, DSTC8): what people typed to ask a service for
something, paired with the service's intent that served it.

Crowd workers wrote the user turns of about 20k dialogues with virtual assistants over 45
services (restaurants, buses, banks, calendars, media...), each service a schema: its
intents (the operations, each with a description and required and optional slots) and its
slots (each with a description and, when categorical, its values). An intent is a tool here:
its service is the server, the slots it takes are its parameters. A request is a user turn
in which the user first asks a service for something (its first `INFORM_INTENT` act: "I'm
feeling hungry, find me somewhere to eat", "now I need a cab for two people"), with that
intent as its gold; where the same intent name exists on another service of the same domain
(Restaurants_1 and Restaurants_2 both `ReserveRestaurant`), either is right.

The requests are in people's words, goals and objects more than operations, which is the
phrasing the synthetic requests lack. The train and dev splits may be read; the test split
is the set's own evaluation and is converted only on request (never for training).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.training.sources.records import Part, ToolKey, distinct, query_row, read_json, tool_row

NAME = "sgd"
MIN_WORDS = 3
"""User turns shorter than this ("yes", "book it") carry the dialogue's context, not a request."""
DISTINCT_DOMAINS = frozenset({"Services"})
"""Domains whose services do different things under one intent name: Services_1 books a hair
stylist, Services_2 a dentist, Services_3 a doctor, Services_4 a therapist."""


def _domain(service: str) -> str:
    """The services that may stand in for each other: Restaurants_1 and Restaurants_2."""
    domain = service.split("_", 1)[0]
    return service if domain in DISTINCT_DOMAINS else domain


def _tools(schema: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for service in schema:
        slots = {slot["name"]: slot for slot in service["slots"]}
        for intent in service["intents"]:
            taken = [*intent["required_slots"], *intent["optional_slots"]]
            parameters = {}
            for name in taken:
                slot = slots[name]
                spec: dict[str, Any] = {"type": "string", "description": slot["description"]}
                if slot.get("is_categorical") and slot.get("possible_values"):
                    spec["enum"] = list(slot["possible_values"])
                parameters[name] = spec
            rows.append(
                tool_row(
                    service["service_name"],
                    intent["name"],
                    intent["description"],
                    parameters,
                    intent["required_slots"],
                    server_description=service["description"],
                )
            )
    return rows


def convert(root: Path, paths: Sequence[str], split: str) -> Part:
    """The tools of the split's schema and the requests of its dialogues."""
    schema_path = next(p for p in paths if p.endswith("schema.json"))
    tools = _tools(read_json(root / schema_path))
    by_domain: dict[tuple[str, str], list[ToolKey]] = {}
    for tool in tools:
        key = (tool["server"], tool["name"])
        by_domain.setdefault((_domain(tool["server"]), tool["name"]), []).append(key)
    queries = []
    for path in sorted(p for p in paths if p != schema_path):
        for dialogue in read_json(root / path):
            asked: set[str] = set()
            for number, turn in enumerate(dialogue["turns"]):
                if turn["speaker"] != "USER":
                    continue
                groups = []
                for frame in turn["frames"]:
                    for action in frame["actions"]:
                        # a service's first intent names its object; a later one leans on
                        # the dialogue ("that sounds good, I'd like to reserve it")
                        if action["act"] != "INFORM_INTENT" or frame["service"] in asked:
                            continue
                        asked.add(frame["service"])
                        if len(turn["utterance"].split()) < MIN_WORDS:
                            continue
                        for intent in action["canonical_values"]:
                            wanted = (frame["service"], intent)
                            alike = by_domain.get((_domain(frame["service"]), intent), [])
                            if wanted in alike:
                                groups.append([wanted, *(k for k in alike if k != wanted)])
                if groups:
                    identifier = f"{NAME}-{split}-{dialogue['dialogue_id']}-{number}"
                    queries.append(query_row(NAME, split, identifier, turn["utterance"], groups))
    return Part(tools, distinct(queries))
