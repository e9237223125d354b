"""What the soak's clients ask for: tasks in plain words, each with the tool call that does
it and the text its answer must contain.

Queries are drawn from templates with numbers, words and places, so most are new to the
router (as a host's are): a cache or a memory keyed by query text grows with them. Two
upstream sets: the example servers (`examples/servers.json`), and the SDK-based relay test
upstream (`tests/upstreams/relay.py`) where those are not installed.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
RELAY = ROOT / "tests" / "upstreams" / "relay.py"

WORDS = ("amber", "basalt", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "iris")
ZONES = (
    ("Tokyo", "Asia/Tokyo"),
    ("Paris", "Europe/Paris"),
    ("New York", "America/New_York"),
    ("Sydney", "Australia/Sydney"),
    ("Nairobi", "Africa/Nairobi"),
    ("São Paulo", "America/Sao_Paulo"),
    ("Reykjavik", "Atlantic/Reykjavik"),
    ("Kolkata", "Asia/Kolkata"),
)


@dataclass(frozen=True, slots=True)
class Task:
    """A query in plain words, the call that does it, and what its answer must contain."""

    query: str
    tool: str
    arguments: dict[str, Any]
    expect: str


Draw = Callable[[random.Random], Task]


def _token(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}-{rng.randrange(10**6)}"


def _echo(rng: random.Random) -> Task:
    word = _token(rng)
    query = rng.choice(("echo the message {} back", "repeat {} back to me", "say {} again"))
    return Task(query.format(word), "everything__echo", {"message": word}, f"Echo: {word}")


def _sum(rng: random.Random) -> Task:
    a, b = rng.randrange(1000), rng.randrange(1000)
    query = rng.choice(("add {} and {}", "what is the sum of {} and {}", "{} plus {}"))
    return Task(query.format(a, b), "everything__get-sum", {"a": a, "b": b}, f"is {a + b}.")


def _time(rng: random.Random) -> Task:
    city, zone = rng.choice(ZONES)
    query = rng.choice(("what time is it in {}", "the current time in {}", "is it night in {}"))
    return Task(query.format(city), "time__get_current_time", {"timezone": zone}, zone)


def _folders(rng: random.Random) -> Task:
    query = rng.choice(
        ("which folders may I read", "list the allowed directories", "where can files be read")
    )
    return Task(query, "filesystem__list_allowed_directories", {}, "Allowed directories")


def _relay_echo(rng: random.Random) -> Task:
    word = _token(rng)
    return Task(f"echo the text {word}", "relay__echo", {"text": word}, word)


def _relay_steps(rng: random.Random) -> Task:
    count = rng.randint(1, 5)
    query = f"count to {count} in steps, reporting progress"
    return Task(query, "relay__steps", {"count": count}, f"{count} steps")


EXAMPLE_TASKS: tuple[Draw, ...] = (_echo, _sum, _time, _folders)
RELAY_TASKS: tuple[Draw, ...] = (_relay_echo, _relay_steps)


def relay_config() -> dict[str, Any]:
    """The `mcpServers` entry of the SDK-based relay upstream."""
    return {"relay": {"command": sys.executable, "args": [str(RELAY)]}}


def draw(tasks: tuple[Draw, ...], rng: random.Random) -> Task:
    """One task of the set, at random."""
    return rng.choice(tasks)(rng)


def answered(result: Any, task: Task) -> str | None:
    """Why a `CallToolResult` is not the task's answer, or None when it is."""
    if result.is_error:
        return f"{task.tool}: tool error {str(result.content)[:200]}"
    if task.expect not in str(result.content):
        return f"{task.tool}: {task.expect!r} not in {str(result.content)[:200]}"
    return None
