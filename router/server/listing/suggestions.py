"""Close matches for an unknown tool name, in work bounded at any catalog size.

`difflib.get_close_matches` against every name of a large catalog is pure Python whose time
grows with the catalog: even in a worker thread it holds the GIL, and the event loop waits
for it in turns of up to the interpreter's switch interval. So each snapshot's names have
their characters counted once (a matrix of 64 counts a name, `[A-Za-z0-9_-]`, built with
numpy with the snapshot, in the rebuild's worker thread), and an unknown name is compared
by difflib only with the `CANDIDATES` names whose counts overlap its own most. The overlap
gives difflib's `quick_ratio`, an upper bound of the ratio it ranks by, so a name past the
cutoff is missed only when more than `CANDIDATES` others look at least as close by their
characters; and taken in descending order of that bound, the comparing stops as soon as no
bound left can beat the three matches found (usually after a handful). A called name
longer than `MAX_NAME` characters gets no suggestions (no tool name is longer than 64).
"""

from __future__ import annotations

import difflib
import heapq
import string
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from router.core.catalog import ToolRecord

if TYPE_CHECKING:  # numpy loads with the first snapshot's names, in the rebuild's thread
    import numpy as np

ALPHABET = string.ascii_letters + string.digits + "_-"
CANDIDATES = 200
"""The names difflib compares an unknown name with, at most."""
CUTOFF = 0.6
"""difflib's similarity a suggestion needs (its `get_close_matches` default)."""
MAX_NAME = 256
SUGGESTIONS = 3


class NameMatcher:
    """One snapshot's names, ready to be matched against (blocking: build it and match
    in a worker thread)."""

    def __init__(
        self, names: Sequence[str], bare: Sequence[str], former: Mapping[str, int] | None = None
    ) -> None:
        import numpy as np

        self.names = list(names)
        self._former = dict(former or {})
        """A renamed tool's names before the rename (`router.shaping`), to its position: a
        call by the old name is pointed at the new one."""
        self._bare: dict[str, list[int]] = {}
        for position, name in enumerate(bare):
            self._bare.setdefault(name, []).append(position)
        self._table = np.full(256, len(ALPHABET), dtype=np.intp)
        for code, char in enumerate(ALPHABET):
            self._table[ord(char)] = code
        encoded = [name.encode() for name in self.names]
        sizes = np.fromiter(map(len, encoded), dtype=np.intp, count=len(encoded))
        self._lengths = np.fromiter(map(len, self.names), dtype=np.float64, count=len(encoded))
        rows = np.repeat(np.arange(len(encoded), dtype=np.intp), sizes)
        codes = self._table[np.frombuffer(b"".join(encoded), dtype=np.uint8)]
        width = len(ALPHABET) + 1
        counts = np.bincount(rows * width + codes, minlength=len(encoded) * width)
        # characters outside the alphabet share the last column: the bound stays a bound
        self._counts = np.minimum(counts, 255).astype(np.uint8).reshape(len(encoded), width)

    @classmethod
    def of(cls, records: Sequence[ToolRecord]) -> NameMatcher:
        """The matcher of a catalog's records, renamed tools known by their old names too."""
        former: dict[str, int] = {}
        for position, record in enumerate(records):
            if record.called_as != record.name:
                former[record.called_as] = position
                former[f"{record.server}__{record.called_as}"] = position
        return cls([r.qualified_name for r in records], [r.name for r in records], former)

    def close(self, name: str, hidden: Collection[int] = ()) -> tuple[str, ...]:
        """Up to three close matches of `name` among the names not at a `hidden` position;
        else the qualified names of tools whose own name is `name`."""
        import numpy as np

        if len(name) > MAX_NAME or not self.names:
            return ()
        renamed = self._former.get(name)
        if renamed is not None and renamed not in hidden:
            return (self.names[renamed],)
        bound = self._bound(name)
        if hidden:
            bound[np.fromiter(hidden, dtype=np.intp, count=len(hidden))] = -1.0
        likely = np.flatnonzero(bound >= CUTOFF)
        if len(likely) > CANDIDATES:
            likely = likely[np.argpartition(-bound[likely], CANDIDATES)[:CANDIDATES]]
        likely = likely[np.argsort(-bound[likely], kind="stable")]
        found = self._best(name, likely.tolist(), bound[likely].tolist())
        if not found:  # a bare upstream tool name: offer its qualified forms
            found = [
                self.names[position]
                for position in self._bare.get(name, ())
                if position not in hidden
            ][:SUGGESTIONS]
        return tuple(found)

    def _best(self, name: str, positions: list[int], bounds: list[float]) -> list[str]:
        """`difflib.get_close_matches` over `positions`, in descending order of their
        bounds, stopping once no bound left can beat the matches found: what difflib
        would answer, from far fewer of its slow ratios."""
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(name)
        best: list[tuple[float, str]] = []  # a min-heap of the best matches so far
        for position, bound in zip(positions, bounds, strict=True):
            if len(best) == SUGGESTIONS and bound < best[0][0]:
                break
            matcher.set_seq1(self.names[position])
            if matcher.real_quick_ratio() < CUTOFF or matcher.quick_ratio() < CUTOFF:
                continue
            score = matcher.ratio()
            if score < CUTOFF:
                continue
            entry = (score, self.names[position])
            if len(best) < SUGGESTIONS:
                heapq.heappush(best, entry)
            elif entry > best[0]:
                heapq.heapreplace(best, entry)
        return [found for _, found in sorted(best, reverse=True)]

    def _bound(self, name: str) -> np.ndarray:
        """At least difflib's `quick_ratio` of `name` against every name, itself an upper
        bound of the `ratio` difflib ranks by."""
        import numpy as np

        codes = self._table[np.frombuffer(name.encode(), dtype=np.uint8)]
        query = np.bincount(codes, minlength=len(ALPHABET) + 1)
        overlap = np.minimum(self._counts, query).sum(axis=1, dtype=np.int64)
        bound: np.ndarray = 2.0 * overlap / (self._lengths + len(name))
        return bound
