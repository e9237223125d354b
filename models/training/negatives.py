"""Hard negatives for the tool-search model's triplets: BM25 look-alikes of the positive.

A hard negative is a tool a request could be mistaken for: one BM25 ranks close to the
request over every tool text, at `NEGATIVE_RANKS`, never a gold tool, never a tool with the
positive's name (an equivalent tool on another server would be a false negative), or one
time in three a sibling of the positive's server (on one server, close tools are the
choices a user makes: enable / disable). With the teacher, one from another server is kept
only if the base model scores it clearly below the positive (`models.training.teacher`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

from models.training.teacher import MARGIN, Teacher

NEGATIVE_RANKS = (2, 30)
"""BM25 ranks (1-based) a hard negative is drawn from: close, but not the very top, where
equivalent tools crowd."""


class _Tool(Protocol):
    @property
    def server(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def key(self) -> tuple[str, str]: ...


T = TypeVar("T", bound=_Tool)


class Negatives(Generic[T]):
    """Hard negatives from BM25 over every tool text."""

    def __init__(self, tools: Sequence[T], seed: int, teacher: bool) -> None:
        import bm25s

        self.tools = list(tools)
        self._position = {tool.key: position for position, tool in enumerate(self.tools)}
        self._teacher = Teacher([tool.text for tool in self.tools]) if teacher else None
        self._index = bm25s.BM25()
        self._index.index(bm25s.tokenize([t.text for t in self.tools], show_progress=False))
        self._by_server: dict[str, list[int]] = {}
        for position, tool in enumerate(self.tools):
            self._by_server.setdefault(tool.server, []).append(position)
        self._random = random.Random(seed)

    def pick(
        self,
        queries: Sequence[str],
        positives: Sequence[T],
        gold: Sequence[set[tuple[str, str]]],
    ) -> list[T | None]:
        """One negative for each query (None where none qualifies)."""
        import bm25s

        low, high = NEGATIVE_RANKS
        ranked, _ = self._index.retrieve(
            bm25s.tokenize(list(queries), show_progress=False),
            k=min(high, len(self.tools)),
            show_progress=False,
        )
        teacher = self._teacher
        vectors = None if teacher is None else teacher.queries(list(queries))
        chosen: list[T | None] = []
        for index, (row, positive, keys) in enumerate(
            zip(ranked.tolist(), positives, gold, strict=True)
        ):
            scores: dict[int, float] | None = None
            if teacher is not None and vectors is not None:
                # the base model's cosines with the positive and with the BM25 look-alikes a
                # negative is drawn from: not with every tool (a batch against 25k tools)
                wanted = [self._position[positive.key], *row]
                values = teacher.tools[wanted] @ vectors[index]
                scores = dict(zip(wanted, values.tolist(), strict=True))
            ceiling = 0.0 if scores is None else MARGIN * scores[self._position[positive.key]]

            def allowed(
                position: int,
                keys: set[tuple[str, str]] = keys,
                positive: T = positive,
                scores: Any = scores,
                ceiling: float = ceiling,
            ) -> bool:
                tool = self.tools[position]
                if tool.key in keys or tool.name == positive.name:
                    return False
                # a sibling stays: on one server, close tools are the choices a user makes
                # (enable / disable); across servers, one that close is an equivalent
                if scores is None or tool.server == positive.server:
                    return True
                return bool(scores[position] < ceiling)

            siblings = [p for p in self._by_server.get(positive.server, []) if allowed(p)]
            if siblings and self._random.random() < 1 / 3:
                chosen.append(self.tools[self._random.choice(siblings)])
                continue
            candidates = [p for p in row[low - 1 :] if allowed(p)]
            chosen.append(self.tools[candidates[0]] if candidates else None)
        return chosen
