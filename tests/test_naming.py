import re

from router.catalog import Catalog, ToolSpec
from router.naming import MAX_NAME_LENGTH, assign_qualified_names, qualify, sanitise

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_plain_names_are_server_double_underscore_tool() -> None:
    assert qualify("time", "get_current_time") == "time__get_current_time"


def test_characters_llm_apis_refuse_become_underscores() -> None:
    assert sanitise("Tripo MCP Server") == "Tripo_MCP_Server"
    assert qualify("bfcl~2", "math.factorial") == "bfcl_2__math_factorial"
    assert VALID.match(qualify("weird/серв", "tool name!"))


def test_long_names_are_cut_to_64_characters_deterministically() -> None:
    server = "a-very-long-server-name-that-goes-on" * 2
    first = qualify(server, "some_tool_with_a_long_name")
    second = qualify(server, "some_tool_with_a_long_name")
    other = qualify(server, "some_tool_with_a_long_name_2")
    assert len(first) == MAX_NAME_LENGTH
    assert VALID.match(first)
    assert first == second
    assert first != other


def test_collisions_are_resolved_and_reported_never_dropped() -> None:
    keys = [("srv", "get.item"), ("srv", "get_item"), ("srv", "get-item"), ("x", "y")]
    names, collisions = assign_qualified_names(keys)
    assert len(set(names)) == len(keys)
    assert all(VALID.match(n) for n in names)
    # the tool whose name needed no change keeps the plain name
    assert names[1] == "srv__get_item"
    assert len(collisions) == 1
    (collision,) = collisions
    assert collision.sanitised == "srv__get_item"
    assert {(s, t) for s, t, _ in collision.members} == {("srv", "get.item"), ("srv", "get_item")}


def test_collision_names_do_not_depend_on_input_order() -> None:
    keys = [("a b", "t"), ("a_b", "t"), ("a.b", "t")]
    forward, _ = assign_qualified_names(keys)
    backward, _ = assign_qualified_names(list(reversed(keys)))
    assert dict(zip(keys, forward, strict=True)) == dict(zip(reversed(keys), backward, strict=True))


def test_catalog_keeps_every_colliding_tool() -> None:
    catalog = Catalog.from_specs(
        [ToolSpec("srv", "get.item", "dotted"), ToolSpec("srv", "get_item", "plain")]
    )
    assert len(catalog) == 2
    assert len(catalog.collisions) == 1
    assert catalog.by_key("srv", "get.item") is not None
