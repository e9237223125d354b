import dataclasses

import pytest

from router.catalog import Catalog, ToolSpec, build_search_text, split_identifier


def test_identifiers_split_into_words() -> None:
    assert split_identifier("get_currentTime") == "get current Time"
    assert split_identifier("HTTPServer-status.v2") == "HTTP Server status v2"


def test_search_text_holds_name_server_description_and_parameters() -> None:
    schema = {
        "type": "object",
        "properties": {"timeZone": {"type": "string", "description": "IANA zone"}},
    }
    text = build_search_text("time", "get_current_time", "Current time.", schema)
    assert "get current time (time)" in text
    assert "Current time." in text
    assert "time Zone: IANA zone" in text


def test_records_are_frozen_and_fingerprinted() -> None:
    catalog = Catalog.from_specs([ToolSpec("s", "t", "one")])
    record = catalog.records[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.description = "two"  # type: ignore[misc]
    changed = Catalog.from_specs([ToolSpec("s", "t", "two")]).records[0]
    assert record.fingerprint != changed.fingerprint
    assert catalog.fingerprint != Catalog.from_specs([ToolSpec("s", "t", "two")]).fingerprint


def test_missing_schema_becomes_an_empty_object_schema() -> None:
    record = Catalog.from_specs([ToolSpec("s", "t", "d", input_schema=None)]).records[0]
    assert record.input_schema == {"type": "object", "properties": {}}
