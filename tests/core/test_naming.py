import re

from router.core.catalog import Catalog, ToolSpec
from router.core.naming import (
    MAX_NAME_LENGTH,
    ROUTER,
    NameRules,
    assign_names,
    assign_qualified_names,
    qualify,
    sanitise,
)

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


def test_an_unprefixed_server_keeps_its_tool_names_and_a_prefixed_one_does_not() -> None:
    rules = NameRules(unprefixed=frozenset({"time"}))
    naming = assign_names([("time", "get_current_time"), ("git", "git_status")], rules)
    assert naming.names == ["get_current_time", "git__git_status"]
    assert naming.clashes == [] and naming.collisions == []


def test_two_unprefixed_servers_listing_one_name_keep_both_the_first_in_name_order_plain() -> None:
    rules = NameRules(unprefixed=frozenset({"alpha", "beta"}))
    keys = [("beta", "search"), ("alpha", "search"), ("beta", "other")]
    naming = assign_names(keys, rules)
    assert naming.names == ["beta__search", "search", "other"]
    (clash,) = naming.clashes
    assert (clash.name, clash.holder, clash.server, clash.assigned) == (
        "search",
        "alpha",
        "beta",
        "beta__search",
    )
    message = clash.describe()
    assert "'alpha' and 'beta'" in message and '"prefix": true' in message
    # the outcome does not depend on the order the upstreams answered in
    backward = assign_names(list(reversed(keys)), rules)
    assert dict(zip(reversed(keys), backward.names, strict=True)) == dict(
        zip(keys, naming.names, strict=True)
    )


def test_a_prefixed_name_wins_over_an_unprefixed_tool_that_spells_it() -> None:
    rules = NameRules(unprefixed=frozenset({"a"}))
    naming = assign_names([("a", "b__c"), ("b", "c")], rules)
    assert naming.names == ["a__b__c", "b__c"]
    assert [(c.holder, c.server) for c in naming.clashes] == [("b", "a")]


def test_an_unprefixed_tool_named_like_a_meta_tool_keeps_its_prefix() -> None:
    rules = NameRules(unprefixed=frozenset({"s"}), reserved=frozenset({"call_tool"}))
    naming = assign_names([("s", "call_tool"), ("s", "x")], rules)
    assert naming.names == ["s__call_tool", "x"]
    (clash,) = naming.clashes
    assert clash.holder == ROUTER
    assert "the router lists 'call_tool' itself" in clash.describe()


def test_unprefixed_names_are_made_valid_like_qualified_ones() -> None:
    rules = NameRules(unprefixed=frozenset({"s"}))
    naming = assign_names([("s", "math.factorial"), ("s", "math_factorial")], rules)
    assert all(VALID.match(name) for name in naming.names)
    assert naming.names[1] == "math_factorial"  # the name that needed no change keeps it
    assert len(set(naming.names)) == 2


def test_the_catalog_names_tools_by_its_rules() -> None:
    catalog = Catalog.from_specs(
        [ToolSpec("a", "x", "one"), ToolSpec("b", "x", "two")],
        NameRules(unprefixed=frozenset({"a", "b"})),
    )
    assert [r.qualified_name for r in catalog.records] == ["x", "b__x"]
    assert catalog.get("x") is catalog.by_key("a", "x")
    assert len(catalog.clashes) == 1
