import dataclasses

import pytest

from router.core.catalog import Catalog, ToolSpec, build_search_text, split_identifier


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


def test_example_values_are_left_out_of_parameter_text() -> None:
    schema = {
        "type": "object",
        "properties": {
            "target": {
                "type": "string",
                "description": "IANA zone (e.g., 'Asia/Tokyo'). Required.",
            },
            "path": {"type": "string", "description": "A file path, e.g. /tmp/x.txt. Must exist."},
        },
    }
    text = build_search_text("time", "convert_time", "Convert time.", schema)
    assert "Tokyo" not in text and "x.txt" not in text
    assert "target: IANA zone. Required." in text
    assert "path: A file path. Must exist." in text


def test_the_text_ranking_reads_from_a_tool_is_capped() -> None:
    """A hostile description stuffed with keywords cannot grow what BM25 and the model read
    past `MAX_SEARCH_TEXT`."""
    from router.core.catalog import MAX_SEARCH_TEXT, Catalog, ToolSpec

    stuffed = "weather email calendar payments " * 2_000
    catalog = Catalog.from_specs([ToolSpec("spam", "everything", stuffed, {"type": "object"})])
    assert len(catalog.records[0].search_text) == MAX_SEARCH_TEXT
