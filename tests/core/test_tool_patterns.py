"""Which servers a tool pattern covers whole, or names (`router.core.tool_patterns`): the
reading `router.policy` and endpoints give a server's resources and prompts."""

from __future__ import annotations

from router.core.tool_patterns import covers_server, names_server


def test_a_pattern_covers_a_server_when_it_names_every_tool_the_server_could_list() -> None:
    for pattern in ("shop/*", "shop/**", "shop__*", "sh*", "*/*", "*", "s*p/*"):
        assert covers_server(pattern, "shop"), pattern
    for pattern in ("shop", "shop/get_*", "shopping/*", "time/*", "shop/*_x"):
        assert not covers_server(pattern, "shop"), pattern


def test_a_pattern_names_a_server_when_it_may_select_one_of_its_tools() -> None:
    for pattern in ("shop/get_*", "shop__send_email", "*/read", "*", "shop/*"):
        assert names_server(pattern, "shop"), pattern
    for pattern in ("time/*", "shopping/x", "get_*", "shop"):
        assert not names_server(pattern, "shop"), pattern
