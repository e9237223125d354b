"""The default embedder: a transformer exported to ONNX, run by onnxruntime, no PyTorch.

The pipeline is the one sentence-transformers runs for the same model, read from the model's
own files: the Hugging Face `tokenizers` WordPiece tokenizer (`tokenizer.json`), truncation at
`max_seq_length`, the pooling its `1_Pooling/config.json` names (mean over real tokens for
MiniLM) and L2 normalisation when `modules.json` lists a `Normalize` module.

Speed and memory choices, each tried on a 2-core machine (what the result is now: documents/s
and query latency in `benchmarks/results/perf.json`, `embedding.backends.onnx`; resident
memory in its `memory.runs`):
- the matrix products run in int8 (`router.embedding.int8_graph`);
- one text per run, never a padded batch: the int8 products quantise their input per call,
  so in a batch a text's vector would depend on its neighbours and their padding; alone,
  every text always gets the same vector, and nothing is spent on padding;
- texts run side by side on one thread each (onnxruntime releases the GIL), which embeds
  far more texts a second on 2 cores than one text after another;
- the tokenizer's own fixed padding (to `max_length` in `tokenizer.json`) is off;
- onnxruntime's CPU memory arena is off: with it, RSS kept growing after batch embedding;
- intra-op threads do not spin-wait, so a busy core is not stolen by an idle wait.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from router.core.errors import EmbeddingError
from router.core.memory import release_free_memory
from router.embedding.base import Vectors
from router.embedding.manifest import ModelSpec, locate
from router.embedding.sessions import transformer_inputs, transformer_session

logger = logging.getLogger(__name__)

INT8_MATMUL = "int8-dynamic"
"""The quantisation that runs matrix products in int8 (`router.embedding.int8_graph`)."""


@dataclass(frozen=True, slots=True)
class Pipeline:
    """How token states become one sentence vector, as the model's config files say."""

    pooling: str = "mean"
    normalize: bool = True
    max_seq_length: int = 256


def read_pipeline(directory: Path, max_seq_length: int | None) -> Pipeline:
    """The pooling, normalisation and length of a sentence-transformers model directory."""
    pooling = "mean"
    pooling_file = directory / "1_Pooling" / "config.json"
    if pooling_file.is_file():
        config = json.loads(pooling_file.read_text("utf-8"))
        modes = [
            name
            for name, key in (
                ("cls", "pooling_mode_cls_token"),
                ("mean", "pooling_mode_mean_tokens"),
                ("max", "pooling_mode_max_tokens"),
            )
            if config.get(key)
        ]
        if not modes and config.get("pooling_mode") in ("cls", "mean", "max"):
            modes = [config["pooling_mode"]]  # sentence-transformers 6 writes one key
        if len(modes) != 1:
            raise EmbeddingError(f"{pooling_file}: one pooling mode of cls, mean, max is supported")
        pooling = modes[0]
    normalize = True
    modules_file = directory / "modules.json"
    if modules_file.is_file():
        modules = json.loads(modules_file.read_text("utf-8"))
        normalize = any(str(m.get("type", "")).endswith(".Normalize") for m in modules)
    length = max_seq_length
    bert_config = directory / "sentence_bert_config.json"
    if length is None and bert_config.is_file():
        length = json.loads(bert_config.read_text("utf-8")).get("max_seq_length")
    return Pipeline(pooling=pooling, normalize=normalize, max_seq_length=int(length or 256))


def embedding_threads() -> int:
    """Texts embedded at once: `MCP_ROUTER_EMBED_THREADS`, else one per core, at most 2.

    Each run uses one thread (onnxruntime's intra-op threads are set to 1): on 2 cores, two
    such runs side by side embedded more texts a second than runs with two intra-op threads
    each, and a lone query was no faster with two (no result file records that comparison;
    the default's figures are `embedding.backends.onnx` in `benchmarks/results/perf.json`).
    """
    value = os.environ.get("MCP_ROUTER_EMBED_THREADS")
    if value is None:
        return max(1, min(2, os.cpu_count() or 1))
    try:
        return max(1, int(value))
    except ValueError:
        raise EmbeddingError(f"MCP_ROUTER_EMBED_THREADS must be a number, got {value!r}") from None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OnnxEmbedder:
    """Embeds with an ONNX model file; loaded once (on first use or `load()`), thread-safe."""

    def __init__(self, spec: ModelSpec, cache_dir: Path | None = None) -> None:
        self._spec = spec
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._pipeline = Pipeline()
        self._wants_token_types = False
        self._executor: ThreadPoolExecutor | None = None

    @property
    def model_id(self) -> str:
        return self._spec.cache_key

    @property
    def dim(self) -> int:
        if self._spec.dimension is not None:
            return self._spec.dimension
        self.load()
        return int(self._session.get_outputs()[0].shape[-1])

    def load(self) -> None:
        """Load the tokenizer and the model now (blocking; idempotent)."""
        with self._lock:
            if self._session is None:
                self._build()

    def _build(self) -> None:
        model_file = locate(self._spec.source, self._spec)
        tokenizer_dir = locate(self._spec.tokenizer, self._spec) if self._spec.tokenizer else None
        tokenizer_dir = tokenizer_dir or model_file.parent
        digest = file_sha256(model_file)
        if self._spec.sha256 and digest != self._spec.sha256:
            raise EmbeddingError(
                f"model {self._spec.id!r}: {model_file} does not match the sha256 in the "
                f"manifest; reinstall it ({self._spec.install or 'see models/README.md'})"
            )
        try:
            import onnxruntime  # noqa: F401  (here for the clear error below)
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                "onnxruntime and tokenizers are not installed: pip install onnxruntime tokenizers"
            ) from exc
        tokenizer_file = tokenizer_dir / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise EmbeddingError(f"model {self._spec.id!r}: no tokenizer.json in {tokenizer_dir}")
        pipeline = read_pipeline(tokenizer_dir, self._spec.max_seq_length)
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=pipeline.max_seq_length)
        logger.info("loading embedding model %s from %s", self._spec.id, model_file)
        try:
            session = transformer_session(
                model_file,
                digest,
                self._cache_dir,
                int8=self._spec.quantization == INT8_MATMUL,
                threads=1,
            )
        except Exception as exc:  # onnxruntime and onnx raise their own untyped errors
            raise EmbeddingError(f"cannot load model {self._spec.id!r}: {exc}") from exc
        inputs = transformer_inputs(session, f"model {self._spec.id!r}: {model_file}")
        width = session.get_outputs()[0].shape[-1]
        expected = self._spec.dimension
        if expected is not None and isinstance(width, int) and width != expected:
            raise EmbeddingError(
                f"model {self._spec.id!r} has dimension {width}, the manifest says {expected}"
            )
        self._wants_token_types = "token_type_ids" in inputs
        self._tokenizer = tokenizer
        self._pipeline = pipeline
        self._session = session
        release_free_memory()  # what reading the model left in the heap

    def _token_ids(self, texts: Sequence[str], prompt: str) -> list[list[int]]:
        self.load()
        encodings = self._tokenizer.encode_batch([prompt + t for t in texts])
        return [encoding.ids for encoding in encodings]

    def _run(self, tokens: list[int]) -> Vectors:
        """The vector of one text: one text per run, never a padded batch (see module doc)."""
        ids = np.asarray([tokens], dtype=np.int64)
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        states: npt.NDArray[np.float32] = self._session.run(None, feeds)[0]
        vector: Vectors = _pool(states, mask, self._pipeline)[0]
        return vector

    def _workers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=embedding_threads(), thread_name_prefix="embed"
                )
            return self._executor

    def _encode(self, texts: Sequence[str], prompt: str) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        token_ids = self._token_ids(texts, prompt)
        if len(token_ids) == 1:
            return self._run(token_ids[0])[None, :]
        # onnxruntime releases the GIL while it runs: one run per core.
        return np.stack(list(self._workers().map(self._run, token_ids)))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, self._spec.document_prompt)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._encode([text], self._spec.query_prompt)[0]
        return vector

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, self._spec.query_prompt)


def _pool(
    states: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], pipeline: Pipeline
) -> Vectors:
    if pipeline.pooling == "cls":
        pooled = states[:, 0, :]
    elif pipeline.pooling == "max":
        masked = np.where(mask[..., None] > 0, states, -np.inf)
        pooled = masked.max(axis=1)
    else:
        weights = mask[..., None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = np.asarray(pooled, dtype=np.float32)
    if pipeline.normalize:
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        pooled = pooled / np.clip(norms, 1e-12, None)
    return np.ascontiguousarray(pooled, dtype=np.float32)
