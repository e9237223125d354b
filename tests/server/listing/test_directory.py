"""The directory of servers (`router.server.listing.directory`): what each line says, and how
a budget too small for everything is met."""

from __future__ import annotations

import pytest

from router.accounting.tokens import TokenCounter
from router.server.listing.directory import HEADER, ServerAbout, directory

COUNT = TokenCounter().count_text
LONG = "Everything about the subject and more: " + "records, reports, files, " * 30


def test_each_line_says_what_the_server_is_for_else_its_first_tools() -> None:
    text = directory(
        [
            ServerAbout("time", None, ("convert_time", "get_current_time")),
            ServerAbout("github", "Issues and pull requests", ("a", "b", "c")),
            ServerAbout("slack", "Team chat"),
            ServerAbout("jira"),
        ],
        250,
        COUNT,
    )
    assert text.splitlines() == [
        HEADER,
        "- github (3 tools): Issues and pull requests",
        "- jira",
        "- slack: Team chat",
        "- time (2 tools): tools convert_time, get_current_time",
    ]


@pytest.mark.parametrize("servers", [3, 10, 40, 200])
@pytest.mark.parametrize("budget", [60, 250, 600])
def test_the_text_fits_its_budget_and_does_not_depend_on_the_order_given(
    servers: int, budget: int
) -> None:
    about = [ServerAbout(f"server_{n:03}", LONG, ("a",)) for n in range(servers)]
    text = directory(about, budget, COUNT)
    assert COUNT(text) <= budget
    assert directory(list(reversed(about)), budget, COUNT) == text
    lines = text.splitlines()[1:]
    shown = [line for line in lines if line.startswith("- server_")]
    more = [int(line.split()[3]) for line in lines if line.startswith("- … and ")]
    assert len(shown) + sum(more) == servers  # every server named, or counted


def test_a_few_servers_keep_words_a_crowd_keeps_names() -> None:
    few = directory([ServerAbout(f"s{n}", LONG) for n in range(5)], 250, COUNT)
    crowd = directory([ServerAbout(f"s{n}", LONG) for n in range(40)], 250, COUNT)
    assert "records, reports" in few
    assert "Everything" not in crowd


def test_no_servers_or_no_budget_is_no_text() -> None:
    assert directory([], 250, COUNT) == ""
    assert directory([ServerAbout("a", "b")], 0, COUNT) == ""
