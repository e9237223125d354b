"""One onnxruntime session for a transformer file, as the embedder and the reranker run it.

Both run on the CPU without onnxruntime's memory arena or spinning threads (an idle router
holds no cores), and both may run the file's int8 rewrite (`router.embedding.int8_graph`),
kept in the cache folder; a stored rewrite that onnxruntime cannot read is made anew once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from router.core.errors import EmbeddingError
from router.embedding.int8_graph import int8_model


def transformer_session(
    model_file: Path, digest: str, cache_dir: Path | None, *, int8: bool, threads: int
) -> Any:
    """An `InferenceSession` of `model_file` (sha256 `digest`), with `threads` intra-op
    threads; of its int8 rewrite when `int8`. Raises what onnxruntime and onnx raise (their
    own untyped errors): the caller names the model in its error."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_cpu_mem_arena = False
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if int8:
        # On x86 CPUs without VNNI (AVX2, plain AVX-512), onnxruntime's u8s8 int8 products
        # saturate int16 sums: measured here (AVX2) a tiny cross-encoder's logits were off by
        # 29% of their spread and MiniLM's vectors visibly so. This makes it multiply
        # u8u8 without saturation on those CPUs (a no-op where VNNI is), for about a
        # quarter more time per batch there (`tests/retrieval/test_rerank.py` holds the error).
        options.add_session_config_entry("session.x64quantprecision", "1")
    model: str | bytes = int8_model(model_file, digest, cache_dir) if int8 else str(model_file)
    try:
        return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception:
        if not int8 or isinstance(model, bytes):
            raise
        Path(model).unlink(missing_ok=True)  # a damaged stored rewrite: make it anew
        return ort.InferenceSession(
            int8_model(model_file, digest, None),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )


def transformer_inputs(session: Any, what: str) -> set[str]:
    """The session's input names, which must hold a transformer's `input_ids` and
    `attention_mask`; `what` names the model in the error."""
    inputs = {i.name for i in session.get_inputs()}
    if not {"input_ids", "attention_mask"} <= inputs:
        raise EmbeddingError(
            f"{what} takes {sorted(inputs)}, not a transformer's input_ids and attention_mask"
        )
    return inputs
