"""The held tools a search looked for: a held tool is not in the index, so a search whose
words match it (BM25 over the held tools alone) names it, with the command that approves it.

Only names and reasons go out: a held tool's new text is what waits for a person's approval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from router.core.catalog import ToolRecord
from router.pinning.decide import Hold

if TYPE_CHECKING:  # numpy and bm25s load with the first held tool a search looks for
    from router.pinning import Pinning
    from router.retrieval.lexical import LexicalIndex

MAX_HELD_NOTED = 5
"""Held tools a search names at most: the ones it matches best."""


@dataclass(frozen=True, slots=True)
class HeldTool:
    """A tool that tool pinning holds and a search looked for: it is not among the results,
    so the answer says why and how it is approved."""

    name: str
    server: str
    reason: str
    approve: str


class HeldWords:
    """BM25 over the held tools of one snapshot, built again when the generation changes."""

    def __init__(self) -> None:
        self._index: tuple[int, LexicalIndex] | None = None

    def matches(self, generation: int, holds: Sequence[Hold], query: str) -> list[Hold]:
        """The `holds` (of the snapshot `generation`) that `query` shares a word with, best
        first (blocking: a worker thread)."""
        from router.retrieval.lexical import LexicalIndex

        cached = self._index
        if cached is None or cached[0] != generation:
            cached = (generation, LexicalIndex([h.record.search_text for h in holds]))
            self._index = cached
        scores = cached[1].scores(query)
        ranked = sorted(range(len(holds)), key=lambda i: (-scores[i], i))
        return [holds[i] for i in ranked if scores[i] > 0]


def noted(
    matches: Iterable[Hold], permits: Callable[[ToolRecord], bool], pinning: Pinning
) -> list[HeldTool]:
    """The first `MAX_HELD_NOTED` of `matches` that `permits` shows, each with the command
    that approves it."""
    found = []
    for hold in matches:
        tool = hold.record
        if not permits(tool):
            continue
        approve = pinning.command("approve", f"{tool.server}/{tool.called_as}")
        found.append(HeldTool(tool.qualified_name, tool.server, hold.reason, approve))
        if len(found) == MAX_HELD_NOTED:
            break
    return found
