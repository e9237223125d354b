"""A cross-encoder that re-scores the hybrid ranking's first few tools.

The bi-encoder embeds a request and each tool apart, so a tool's vector cannot know which of
its words a given request cares about; a cross-encoder reads the pair together and can.
That costs one model run per (request, tool) pair instead of one per request, so it only
re-scores the top N the hybrid ranking already chose, and its verdict is blended with that
ranking's score rather than replacing it (`rerank`). The model is a folder made by
`python -m models.training.export_reranker` (trained by `models.train_reranker`): an int8
ONNX file run by onnxruntime with int8 matrix products (`router.embedding.int8_graph`), the
`tokenizers` WordPiece tokenizer, and `reranker.json`. No PyTorch; onnxruntime and
tokenizers are imported on load, so `import router` stays light.

Pairs run in padded batches: the int8 products quantise their input per run, so a pair's
logit can move by a hair with its batch-mates; the same candidates always give the same
logits.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from router.core.errors import EmbeddingError
from router.embedding.onnx import embedding_threads, file_sha256
from router.embedding.sessions import transformer_inputs, transformer_session
from router.retrieval.types import ScoredTool

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "reranker.json"
BATCH_SIZE = 32
"""Pairs per model run: a top 20 runs at once."""
BUNDLED = "minilm-l6-rerank"
"""The reranker shipped in `models/` (`router.rerank: true` serves it)."""
DEFAULT_DEPTH = 10
DEFAULT_WEIGHT = 0.3
"""N and the weight of a folder whose `reranker.json` names none (the shipped one names those
chosen on the dev halves by `python -m benchmarks.rerank`)."""

Logits = npt.NDArray[np.float32]


class Reranker:
    """Scores (request, tool text) pairs with an exported cross-encoder; loaded once (on first
    use or `load()`), thread-safe. `cache_dir` keeps the int8 rewrite of the model file as
    the embedder does (`<cache_dir>/models/`)."""

    def __init__(
        self, directory: Path, cache_dir: Path | None = None, *, batch_size: int = BATCH_SIZE
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.directory = Path(directory)
        self._cache_dir = cache_dir
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._pad_id = 0
        self._wants_token_types = True
        self.max_length = 0
        self.depth = DEFAULT_DEPTH
        """How many of the ranking's first tools `reorder` re-scores (read at load)."""
        self.weight = DEFAULT_WEIGHT
        """The reranker's share of the blend (`rerank`; read at load)."""

    @classmethod
    def bundled(cls, cache_dir: Path | None = None) -> Reranker:
        """The reranker shipped inside mcp-router (`models/minilm-l6-rerank`)."""
        return cls(Path(str(resources.files("router.models").joinpath(BUNDLED))), cache_dir)

    def load(self) -> None:
        """Read the folder and start the model now (blocking; idempotent)."""
        with self._lock:
            if self._session is None:
                self._build()

    def _build(self) -> None:
        for name in (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE):
            if not (self.directory / name).is_file():
                raise EmbeddingError(
                    f"reranker {self.directory}: no {name} (make the folder with "
                    "`python -m models.training.export_reranker`)"
                )
        try:
            config = json.loads((self.directory / CONFIG_FILE).read_text("utf-8"))
            max_length = int(config["max_length"])
            depth = int(config.get("depth", DEFAULT_DEPTH))
            weight = float(config.get("weight", DEFAULT_WEIGHT))
            if depth < 1 or not 0.0 <= weight <= 1.0:
                raise ValueError(f"depth {depth} (at least 1) or weight {weight} (0 to 1)")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(
                f"reranker {self.directory}: unreadable {CONFIG_FILE}: {exc}"
            ) from exc
        model_file = self.directory / MODEL_FILE
        digest = file_sha256(model_file)
        if config.get("sha256") and config["sha256"] != digest:
            raise EmbeddingError(
                f"reranker {self.directory}: {MODEL_FILE} does not match the sha256 in "
                f"{CONFIG_FILE}; export the folder again"
            )
        try:
            import onnxruntime  # noqa: F401  (here for the clear error below)
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                "onnxruntime and tokenizers are not installed: pip install onnxruntime tokenizers"
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(self.directory / TOKENIZER_FILE))
        except Exception as exc:  # tokenizers raises its own untyped errors
            raise EmbeddingError(f"reranker {self.directory}: bad {TOKENIZER_FILE}: {exc}") from exc
        tokenizer.no_padding()  # padded here, to the batch's longest pair
        tokenizer.enable_truncation(max_length=max_length)
        try:
            session = transformer_session(
                model_file, digest, self._cache_dir, int8=True, threads=embedding_threads()
            )
        except Exception as exc:  # onnxruntime and onnx raise their own untyped errors
            raise EmbeddingError(f"cannot load reranker {self.directory}: {exc}") from exc
        inputs = transformer_inputs(session, f"reranker {self.directory}: {MODEL_FILE}")
        self._wants_token_types = "token_type_ids" in inputs
        pad = tokenizer.token_to_id("[PAD]")
        self._pad_id = 0 if pad is None else int(pad)
        self.max_length = max_length
        self.depth, self.weight = depth, weight
        self._tokenizer = tokenizer
        self._session = session

    def scores(self, query: str, texts: Sequence[str]) -> Logits:
        """The logit of each (query, text) pair, in order (blocking: run it off the event
        loop). Pairs longer than `max_length` tokens lose tokens from the longer side."""
        self.load()
        if not texts:
            return np.zeros(0, dtype=np.float32)
        out: list[Logits] = []
        for start in range(0, len(texts), self._batch_size):
            chunk = texts[start : start + self._batch_size]
            encodings = self._tokenizer.encode_batch([(query, text) for text in chunk])
            width = max(len(e.ids) for e in encodings)
            ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, encoding in enumerate(encodings):
                length = len(encoding.ids)
                ids[row, :length] = encoding.ids
                mask[row, :length] = 1
                types[row, :length] = encoding.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._wants_token_types:
                feeds["token_type_ids"] = types
            logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
            out.append(logits.reshape(len(encodings), -1)[:, 0])
        return np.concatenate(out)

    def reorder(self, query: str, found: Sequence[ScoredTool]) -> list[ScoredTool]:
        """`found` (a ranking's first `depth`) re-scored for `query` and blended at `weight`
        (blocking)."""
        self.load()
        return rerank(found, self.scores(query, [r.tool.search_text for r in found]), self.weight)


def rerank(
    results: Sequence[ScoredTool], logits: Sequence[float] | Logits, weight: float
) -> list[ScoredTool]:
    """`results` (a ranking's top N) reordered by `(1 - weight) * score / best score + weight
    * exp(logit - best logit)`, ranks renumbered from 1 and `score` the blended one.

    Both shares are relative to the list's best, in (0, 1]: the reranker is trained listwise
    (softmax over a request's candidates), so only its logits' differences mean anything,
    and `exp` of a difference is the candidate's probability against the best's.

    `logits` holds one value per result, in order (`Reranker.scores` of their search texts);
    those of pinned tools and of exact-name matches are ignored: such results stay first, in
    their order, unchanged but for `rank`. The bests are among the others; when the best
    score is not positive the ranking's share is 0 for all. Weight 0 keeps the given order
    (the scores become the relative ones); ties keep it too.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the rerank weight is between 0 and 1, got {weight}")
    if len(logits) != len(results):
        raise ValueError(f"{len(logits)} logits for {len(results)} results")
    fixed = [r for r in results if r.pinned or r.exact_match]
    movable = [
        (r, float(x))
        for r, x in zip(results, logits, strict=True)
        if not r.pinned and not r.exact_match
    ]
    best = max((r.score for r, _ in movable), default=0.0)
    top = max((x for _, x in movable), default=0.0)
    blended = [
        (
            (1.0 - weight) * (r.score / best if best > 0 else 0.0) + weight * math.exp(x - top),
            position,
            r,
        )
        for position, (r, x) in enumerate(movable)
    ]
    if weight > 0:
        blended.sort(key=lambda item: (-item[0], item[1]))
    ordered = [replace(r, rank=rank) for rank, r in enumerate(fixed, start=1)]
    ordered += [
        replace(r, rank=rank, score=score)
        for rank, (score, _, r) in enumerate(blended, start=len(fixed) + 1)
    ]
    return ordered
