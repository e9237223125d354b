"""Whole servers as a signal: a request that fits what a server is for lifts its tools.

"remember that Alice works at Acme" names no memory operation, yet it reads like what the
memory server is for. A server is the centroid of its tools' vectors (its tools taken
together), blended with the vector of what it says about itself (its title, description
and instructions at initialize, or a config `description`) where it said anything. The
servers nearest the request (at most `TOP_SERVERS`) lift their tools by the ranking's
`server_bonus`, times their similarity relative to the nearest one, as a fraction of the
best fused score like every other bonus (`Ranking.server_bonus`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from router.core.catalog import ToolRecord
from router.embedding.base import Embedder

TOP_SERVERS = 3
"""How many of the nearest servers lift their tools."""


class ServerSignal:
    """Each server's vector, from its tools' vectors and its own words (blocking to build)."""

    def __init__(
        self,
        tool_vectors: npt.NDArray[np.float32],
        server_tools: Mapping[str, Sequence[int]],
        about: Mapping[str, str],
    ) -> None:
        self.servers = list(server_tools)
        self.about = about
        self._members = [np.asarray(server_tools[s], dtype=np.intp) for s in self.servers]
        rows = [tool_vectors[members].mean(axis=0) for members in self._members]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), tool_vectors.shape[1])
        self._matrix = _normalised(matrix)

    @classmethod
    def of(
        cls,
        records: Sequence[ToolRecord],
        tool_vectors: npt.NDArray[np.float32],
        server_tools: Mapping[str, Sequence[int]],
    ) -> ServerSignal:
        """The signal of one catalog: each server's words are its tools' first
        `server_description` (the config's description, then what it said at initialize)."""
        about: dict[str, str] = {}
        for record in records:
            if record.server_description and record.server not in about:
                about[record.server] = record.server_description
        return cls(tool_vectors, server_tools, about)

    def described(self, embedder: Embedder | None) -> ServerSignal:
        """Each described server's vector blended with its words' (blocking: embeds them)."""
        described = [i for i, s in enumerate(self.servers) if self.about.get(s)]
        if described and embedder is not None:
            words = embedder.embed_documents([self.about[self.servers[i]] for i in described])
            blended = self._matrix[described] + np.asarray(words, dtype=np.float32)
            self._matrix[described] = _normalised(blended)
        return self

    def lift(self, scores: dict[int, float], query: npt.NDArray[np.float32], weight: float) -> None:
        """Add each candidate's gain to its fused score (`scores`, in place)."""
        if not scores:
            return
        for position, gain in self.bonuses(query, weight, max(scores.values())).items():
            if position in scores:
                scores[position] += gain

    def bonuses(
        self, query: npt.NDArray[np.float32], weight: float, scale: float
    ) -> dict[int, float]:
        """Each tool of the nearest servers, with what it gains."""
        if not self.servers or weight <= 0:
            return {}
        similarity = self._matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-similarity, kind="stable")[:TOP_SERVERS]
        best = float(similarity[order[0]])
        if best <= 0:
            return {}
        gains: dict[int, float] = {}
        for index in order.tolist():
            share = max(float(similarity[index]), 0.0) / best
            for position in self._members[index].tolist():
                gains[position] = weight * scale * share
        return gains


def _normalised(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: npt.NDArray[np.float32] = matrix / np.maximum(norms, 1e-12)
    return result
