"""`QueryBatcher`: concurrent query embeddings share model calls, each caller gets its rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from router.core.errors import EmbeddingError
from router.embedding.base import Vectors
from router.server.http.batching import QueryBatcher


class GatedEmbedder:
    """Vectors that encode their text; the first call waits for `gate`; `fail` makes the
    next call raise."""

    model_id = "gated"
    dim = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.fail = False

    def load(self) -> None:
        """Nothing to load."""

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.embed_queries(texts)

    def embed_query(self, text: str) -> Vectors:
        vectors: Vectors = self.embed_queries([text])[0]
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        self.entered.set()
        assert self.gate.wait(5)
        if self.fail:
            self.fail = False
            raise RuntimeError("model broke")
        return np.array([[len(t), ord(t[-1])] for t in texts], dtype=np.float32)


def until_waiting(batcher: QueryBatcher, count: int) -> None:
    """Until `count` callers queue (threads offer no event for that: poll, bounded)."""
    deadline = time.monotonic() + 5
    while batcher.waiting < count:
        assert time.monotonic() < deadline, batcher.waiting
        time.sleep(0.001)


def expected(*texts: str) -> Vectors:
    return np.array([[len(t), ord(t[-1])] for t in texts], dtype=np.float32)


def test_queries_that_arrive_during_a_model_call_share_the_next_one() -> None:
    inner = GatedEmbedder()
    batcher = QueryBatcher(inner)
    with ThreadPoolExecutor(6) as pool:
        first = pool.submit(batcher.embed_query, "lone")
        assert inner.entered.wait(5)
        queued: list[Future[Vectors]] = [
            pool.submit(batcher.embed_queries, [f"query {i}", f"part {i}!"]) for i in range(5)
        ]
        until_waiting(batcher, 5)
        inner.gate.set()
        answers = [future.result(timeout=5) for future in queued]

    assert inner.calls[0] == ["lone"]
    assert len(inner.calls) == 2 and len(inner.calls[1]) == 10
    np.testing.assert_array_equal(first.result(), expected("lone")[0])
    for i, answer in enumerate(answers):
        np.testing.assert_array_equal(answer, expected(f"query {i}", f"part {i}!"))
    assert batcher.waiting == 0


def test_a_model_error_reaches_every_caller_of_that_batch_and_the_next_call_works() -> None:
    inner = GatedEmbedder()
    inner.fail = True
    batcher = QueryBatcher(inner)
    inner.gate.set()

    with pytest.raises(RuntimeError, match="model broke"):
        batcher.embed_query("first")
    np.testing.assert_array_equal(batcher.embed_queries(["again"]), expected("again"))
    assert (batcher.model_id, batcher.dim) == ("gated", 2)


def test_a_caller_behind_a_hung_model_call_gives_up_and_the_queue_goes_on() -> None:
    """A follower waits at most its timeout (a hung model call must not hold every searching
    thread), leaves the queue, and the batcher serves the next callers once the call ends."""
    inner = GatedEmbedder()
    batcher = QueryBatcher(inner, timeout=0.2)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(batcher.embed_query, "stuck")
        assert inner.entered.wait(5)
        behind = pool.submit(batcher.embed_query, "behind")
        with pytest.raises(EmbeddingError, match=r"waited 0\.2s"):
            behind.result(timeout=5)
        assert batcher.waiting == 0  # it left the queue
        inner.gate.set()
        np.testing.assert_array_equal(first.result(timeout=5), expected("stuck")[0])
    np.testing.assert_array_equal(batcher.embed_queries(["later"]), expected("later"))
