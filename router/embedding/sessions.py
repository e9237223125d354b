"""One onnxruntime session for a transformer file, as the embedder and the reranker run it.

Both run on the CPU without onnxruntime's memory arena or spinning threads (an idle router
holds no cores), and both may run the file's int8 rewrite (`router.embedding.int8_graph`),
kept in the cache folder; a stored rewrite that onnxruntime cannot read is made anew once.

The int8 rewrite multiplies uint8 activations by int8 weights. On x86 CPUs without VNNI
(AVX2, plain AVX-512) onnxruntime's kernels for that sum neighbouring products in saturating
16-bit arithmetic: measured on an AVX2 CPU, a tiny cross-encoder's logits were off by 29% of
their spread and MiniLM's vectors visibly so. `session.x64quantprecision` makes them
multiply uint8 by uint8 instead, without saturation, but onnxruntime applies it on every x86
CPU with AVX2, VNNI or not, where it only costs time: on a VNNI CPU the default model's
queries took about a third longer with it (issue 53), for the very same vectors (equal to
the last bit, `tests/embedding/test_int8_precision.py`). So it is set only where the CPU
saturates (`int8_products_saturate`): an x86 CPU whose flags name no VNNI (`avx512_vnni`,
`avx_vnni`, `amx_int8`), or whose flags cannot be read. `MCP_ROUTER_INT8_PRECISE` (1 or 0)
overrides the choice. Vectors are exact either way, so the cache key does not depend on it.
"""

from __future__ import annotations

import logging
import os
import platform
from functools import cache
from pathlib import Path
from typing import Any

from router.core.errors import EmbeddingError
from router.embedding.int8_graph import int8_model

logger = logging.getLogger(__name__)

PRECISE_ENV = "MCP_ROUTER_INT8_PRECISE"
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
"""CPU flags (as Linux's /proc/cpuinfo names them) under which onnxruntime's uint8 x int8
products sum in 32 bits (VNNI's VPDPBUSD, AMX's tiles): no saturation."""
_X86 = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The first processor's flags from `cpuinfo`; None where it cannot be read (not Linux)."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return frozenset(value.split())
    except OSError:
        return None
    return None


def saturates(machine: str, flags: frozenset[str] | None) -> bool:
    """Whether onnxruntime's uint8 x int8 products saturate on a CPU of `machine`
    (`platform.machine()`) with `flags`: an x86 CPU without VNNI, or one whose flags are
    unknown (the safe side). Elsewhere onnxruntime compiles the setting out."""
    if machine.lower() not in _X86:
        return False
    return flags is None or not (flags & VNNI_FLAGS)


@cache
def _detected() -> bool:
    found = saturates(platform.machine(), cpu_flags())
    logger.debug("int8 products %s on this CPU", "saturate" if found else "do not saturate")
    return found


def int8_products_saturate() -> bool:
    """Whether to set `session.x64quantprecision`: `MCP_ROUTER_INT8_PRECISE` (1 or 0) when
    set, else what this CPU needs (`saturates`, read once)."""
    value = os.environ.get(PRECISE_ENV, "").strip()
    if value in ("1", "0"):
        return value == "1"
    if value:
        raise EmbeddingError(f"{PRECISE_ENV} must be 1 or 0, got {value!r}")
    return _detected()


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
    if int8 and int8_products_saturate():
        # uint8 x uint8 products, without the saturation of this CPU's uint8 x int8 ones
        # (module doc; `tests/retrieval/test_rerank.py` holds the error)
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
