from router.accounting.formats import (
    ToolFormat,
    normalise_schema,
    serialise,
    to_anthropic,
    to_mcp,
    to_openai,
    tool_list_payload,
)
from router.accounting.tokens import TokenCounter
from router.core.catalog import Catalog, ToolRecord, ToolSpec

SCHEMA = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "description": "IANA name"}},
    "required": ["timezone"],
}


def _tool() -> ToolRecord:
    spec = ToolSpec("time", "get_current_time", "Get the current time.", SCHEMA)
    return Catalog.from_specs([spec]).records[0]


def test_mcp_format() -> None:
    assert to_mcp(_tool()) == {
        "name": "time__get_current_time",
        "description": "Get the current time.",
        "inputSchema": SCHEMA,
    }


def test_openai_format() -> None:
    assert to_openai(_tool()) == {
        "type": "function",
        "function": {
            "name": "time__get_current_time",
            "description": "Get the current time.",
            "parameters": SCHEMA,
        },
    }


def test_anthropic_format() -> None:
    assert to_anthropic(_tool()) == {
        "name": "time__get_current_time",
        "description": "Get the current time.",
        "input_schema": SCHEMA,
    }


def test_dataset_dialect_schemas_become_json_schema() -> None:
    bfcl = {
        "type": "dict",
        "properties": {
            "base": {"type": "float"},
            "sides": {"type": "tuple", "items": {"type": "int"}},
            "anything": {"type": "any", "description": "x"},
        },
    }
    assert normalise_schema(bfcl) == {
        "type": "object",
        "properties": {
            "base": {"type": "number"},
            "sides": {"type": "array", "items": {"type": "integer"}},
            "anything": {"description": "x"},
        },
    }
    assert normalise_schema(None) == {"type": "object", "properties": {}}


def test_wire_text_is_compact_json() -> None:
    payload = tool_list_payload([_tool()], ToolFormat.ANTHROPIC)
    assert serialise(payload) == (
        '[{"name":"time__get_current_time","description":"Get the current time.",'
        '"input_schema":{"type":"object","properties":{"timezone":{"type":"string",'
        '"description":"IANA name"}},"required":["timezone"]}}]'
    )


def test_token_counts_are_of_the_wire_text() -> None:
    counter = TokenCounter()
    assert counter.count_text("hello world") == 2
    tool = _tool()
    hand_written = (
        '{"tools":[{"name":"time__get_current_time","description":"Get the current time.",'
        '"inputSchema":{"type":"object","properties":{"timezone":{"type":"string",'
        '"description":"IANA name"}},"required":["timezone"]}}]}'
    )
    assert counter.count_tools([tool], ToolFormat.MCP) == counter.count_text(hand_written)
    assert counter.count_tools([], ToolFormat.OPENAI) == counter.count_text("[]")


def test_every_format_costs_tokens_and_more_tools_cost_more() -> None:
    counter = TokenCounter()
    one = Catalog.from_specs([ToolSpec("a", "x", "Do x.", SCHEMA)]).records
    two = Catalog.from_specs([ToolSpec("a", "x", "Do x.", SCHEMA), ToolSpec("a", "y", "Do y.")])
    for fmt in ToolFormat:
        assert 0 < counter.count_tools(one, fmt) < counter.count_tools(two.records, fmt)
        estimate = counter.estimate_tools(two.records, fmt)
        assert abs(estimate - counter.count_tools(two.records, fmt)) <= 8
