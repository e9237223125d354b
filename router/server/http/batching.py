"""Query embeddings for concurrent requests, computed together.

Under load the HTTP front ranks many queries at once, each in its own worker thread. One
model call per query makes the threads fight over the cores (and torch's own thread pool),
while one call for a batch costs little more than a call for one query. So a caller that
finds the model busy queues its texts; when the running call ends, the next caller in line
embeds everything queued in one call and hands each caller its rows. An idle router embeds
a lone query at once: no timer, no added wait.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from router.core.errors import EmbeddingError
from router.embedding.base import Embedder, Vectors

MAX_BATCH_TEXTS = 64
FOLLOWER_TIMEOUT = 60.0
"""Seconds a caller queued behind a model call waits before it gives up: a hung model call
must not hold every searching thread for ever."""


@dataclass
class _Job:
    texts: list[str]
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    result: Vectors | None = None
    error: BaseException | None = None


class QueryBatcher:
    """An `Embedder` whose `embed_queries` calls from many threads share model calls;
    documents pass straight through (the index embeds them in one batch already)."""

    def __init__(
        self,
        inner: Embedder,
        max_batch_texts: int = MAX_BATCH_TEXTS,
        timeout: float = FOLLOWER_TIMEOUT,
    ) -> None:
        self._inner = inner
        self._max = max_batch_texts
        self._timeout = timeout
        self._lock = threading.Lock()
        self._queue: list[_Job] = []
        self._busy = False

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def load(self) -> None:
        self._inner.load()

    @property
    def waiting(self) -> int:
        """Callers queued behind the model call in progress."""
        with self._lock:
            return len(self._queue)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        vectors: Vectors = self.embed_queries([text])[0]
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        job = _Job(list(texts))
        with self._lock:
            self._queue.append(job)
            job.lead = not self._busy
            self._busy = True
        if not job.lead and not job.done.wait(self._timeout):
            with self._lock:
                promoted = job.lead  # made the next leader as the wait ran out: lead on
                if not promoted and job in self._queue:
                    self._queue.remove(job)
            if not promoted and not job.done.is_set():
                raise EmbeddingError(
                    f"query embedding waited {self._timeout:g}s behind another model call"
                )
        if job.lead:
            self._run_batch()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def _run_batch(self) -> None:
        """Embed the queue's head (our own job first), then pass the lead on."""
        with self._lock:
            batch: list[_Job] = []
            size = 0
            while self._queue and (not batch or size + len(self._queue[0].texts) <= self._max):
                batch.append(self._queue.pop(0))
                size += len(batch[-1].texts)
        try:
            vectors = self._inner.embed_queries([t for job in batch for t in job.texts])
        except BaseException as exc:  # every caller in the batch gets the model's error
            for job in batch:
                job.error = exc
        else:
            start = 0
            for job in batch:
                job.result = np.ascontiguousarray(vectors[start : start + len(job.texts)])
                start += len(job.texts)
        with self._lock:
            if self._queue:
                successor = self._queue[0]
                successor.lead = True
                successor.done.set()
            else:
                self._busy = False
        for job in batch:
            job.done.set()
