"""Requests of several steps, joined from the pools' single-tool requests.

A user asks for a task, and a task often takes tools in turn: "check my balance on Goerli,
then send 0.05 ETH if it is enough", "list the build's files, then give their sizes". A
query of one vector must then sit near each of the tools it needs, not only near the first
one named. These requests join two to four tools' requests, from one server or from
several, with the words users join steps with; one of the tools is the positive, and none
of the others may be its negative.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

_JOINS: tuple[tuple[str, str, str], ...] = (
    # (before the first step, between steps, before the last step)
    ("First, ", ". Then, ", ". Finally, "),
    ("", ", then ", ", and finally "),
    ("I need to ", " and also ", " and "),
    ("Can you ", "? After that, ", "? Last, "),
    ("Please ", "; next, ", "; then "),
)


@dataclass(frozen=True, slots=True)
class Step:
    """One tool's request, with the tool's key (server, name)."""

    key: tuple[str, str]
    request: str

    @property
    def server(self) -> str:
        return self.key[0]


def join_steps(requests: Sequence[str], rng: random.Random) -> str:
    """Two or more requests as one multi-step request."""
    first, between, last = rng.choice(_JOINS)
    text = first + requests[0]
    for position, request in enumerate(requests[1:], start=1):
        text += (last if position == len(requests) - 1 and len(requests) > 2 else between) + request
    return text


def multi_step_requests(
    steps: Sequence[Step], count: int, rng: random.Random
) -> list[tuple[str, Step, set[tuple[str, str]]]]:
    """`count` requests of two to four steps: (text, the positive step, every step's key).

    Half the time the next step is a sibling on the same server (a task inside one
    service), else any tool (a task across services)."""
    by_server: dict[str, list[Step]] = {}
    for step in steps:
        by_server.setdefault(step.server, []).append(step)
    made: list[tuple[str, Step, set[tuple[str, str]]]] = []
    for _ in range(count if steps else 0):
        chosen = [rng.choice(steps)]
        for _ in range(rng.choice((1, 1, 2, 3)) if len(steps) > 1 else 0):
            taken = {s.key for s in chosen}
            siblings = [s for s in by_server[chosen[0].server] if s.key not in taken]
            pick = rng.choice(siblings) if siblings and rng.random() < 0.5 else rng.choice(steps)
            if pick.key not in taken:
                chosen.append(pick)
        if len(chosen) < 2:
            continue
        text = join_steps([s.request for s in chosen], rng)
        made.append((text, rng.choice(chosen), {s.key for s in chosen}))
    return made
