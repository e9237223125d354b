"""The pure parts of the upstream package: filters, backoff, child environment, conversion."""

from __future__ import annotations

import mcp_types as types

from router.config import parse_config
from router.upstream import BackoffPolicy, ToolFilter, matches
from router.upstream.connection.environment import child_environment
from router.upstream.listing.convert import server_description, tool_spec


def test_a_pattern_with_a_slash_matches_server_and_tool() -> None:
    assert matches("time/*", "time", "get_current_time")
    assert not matches("time/*", "git", "git_status")
    assert matches("*/delete_*", "memory", "delete_entities")
    assert matches("get_*", "time", "get_current_time")
    assert not matches("get_*", "get", "convert_time")


def test_global_and_per_server_patterns_combine() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "git": {"command": "x", "exclude": ["git_reset"]},
                "time": {"command": "y"},
            },
            "router": {"exclude": ["*/delete_*"], "include": ["git_*", "time/*"]},
        }
    )
    git, time = ToolFilter.for_server(config, "git"), ToolFilter.for_server(config, "time")
    assert git.allows("git", "git_status")
    assert not git.allows("git", "git_reset")
    assert not git.allows("git", "delete_branch")
    assert not git.allows("git", "status")
    assert time.allows("time", "convert_time")
    assert ToolFilter().allows("any", "tool")


def test_backoff_grows_to_its_cap() -> None:
    policy = BackoffPolicy(initial=0.5, factor=2, maximum=3, jitter=0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 10)] == [0.5, 1, 2, 3, 3]


def test_backoff_jitter_stays_within_its_spread() -> None:
    policy = BackoffPolicy(initial=1, jitter=0.1)
    assert all(0.9 <= policy.delay(1) <= 1.1 for _ in range(100))


def test_the_child_environment_is_the_minimum_plus_the_configured_env() -> None:
    parent = {"PATH": "/bin", "HOME": "/home/me", "AWS_SECRET_ACCESS_KEY": "s", "BASH_FUNC": "() {"}
    env = child_environment({"TOKEN": "t", "PATH": "/opt/bin"}, parent)
    assert env == {"PATH": "/opt/bin", "HOME": "/home/me", "TOKEN": "t"}


def test_shell_functions_are_not_inherited() -> None:
    assert "TERM" not in child_environment({}, {"TERM": "() { :; }"})


def test_an_sdk_tool_becomes_a_tool_spec() -> None:
    tool = types.Tool(
        name="get_current_time",
        description="Get the time",
        input_schema={"type": "object", "properties": {"timezone": {"type": "string"}}},
        annotations=types.ToolAnnotations(title="Current time", read_only_hint=True),
    )
    about = server_description(
        types.Implementation(name="mcp-time", title="Time", version="1"), "Use IANA names."
    )
    spec = tool_spec("time", tool, about)

    assert spec.server == "time"
    assert spec.name == "get_current_time"
    assert spec.input_schema == tool.input_schema
    assert spec.annotations == {"title": "Current time", "readOnlyHint": True}
    assert spec.title == "Current time"
    assert spec.server_description == "Time\nUse IANA names."


def test_a_server_without_description_or_instructions_has_none() -> None:
    assert server_description(types.Implementation(name="x", version="1"), None) is None
    assert server_description(None, "  ") is None
