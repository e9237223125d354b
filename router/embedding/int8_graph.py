"""Run an int8-weight ONNX transformer's matrix products in int8, and keep its tables int8.

The packaged all-MiniLM-L6-v2 export stores each weight as int8 with a float scale and
turns it back into float32 in the graph (`Cast` then `Mul`). onnxruntime folds those into
float32 constants at load, so the model holds every weight as float32 (four times its int8
size) and multiplies in float32. This rewrite, done in memory at load, changes two patterns:

- `MatMul(x, Mul(Cast(W_int8), scale))` becomes onnxruntime's `DynamicQuantizeMatMul`,
  which quantises `x` per call and multiplies int8 by int8 (VNNI where the CPU has it);
- `Gather(Mul(Cast(T_int8), row_scale), ids)` (the embedding tables) gathers the int8 rows
  first and scales only those, so the 30,522 x 384 word table stays int8 in memory.

Tried on a 2-core machine with MSC-Bench tool texts, the rewrite embedded documents faster
and lowered RSS at load; what the default embedder does now is `embedding.backends.onnx` and
`memory.runs` of `benchmarks/results/perf.json`. Retrieval stays within 0.01 Recall@5 of the
float32 sentence-transformers model on every public set (`delta_recall@5` in
`benchmarks/results/backend-parity.json`). A graph without these patterns passes through
unchanged.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

_CONTRIB_DOMAIN = "com.microsoft"
REWRITE_VERSION = 1
"""Part of the stored file's name: a changed rewrite never loads an old file."""
_CHILD_TIMEOUT = 300.0


def int8_model(model_file: Path, source_sha256: str, cache_dir: Path | None) -> str | bytes:
    """The rewritten model for `InferenceSession`: a file path from `cache_dir/models` when
    it is there or can be stored there, else the bytes.

    The rewrite is made once, by a child process, and stored: the router then loads a file
    and never holds the `onnx` package or the parsed graph (both stay resident once loaded,
    and rewriting in process at every start costs more RSS still). Where nothing can be
    stored, the rewrite happens here, in memory.
    """
    name = f"{model_file.stem}-{source_sha256[:16]}-int8-v{REWRITE_VERSION}.onnx"
    target = cache_dir / "models" / name if cache_dir is not None else None
    if target is not None and (target.is_file() or _store_in_child(model_file, target)):
        return str(target)
    data, _ = rewrite_for_int8(model_file)
    return data


def _store_in_child(model_file: Path, target: Path) -> bool:
    """Run `store` in a child Python; whether the file is now there."""
    command = [sys.executable, "-m", "router.embedding.int8_graph", str(model_file), str(target)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_CHILD_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.info("cannot prepare the int8 model in a child process (%s)", exc)
        return False
    if done.returncode != 0:
        logger.info("cannot store the int8 model in %s: %s", target, done.stderr.strip())
    return target.is_file()


def store(model_file: Path, target: Path) -> None:
    """Write the rewrite of `model_file` to `target`, atomically (a concurrent reader sees
    all of it or nothing)."""
    data, _ = rewrite_for_int8(model_file)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as handle:
        handle.write(data)
    os.replace(handle.name, target)


def rewrite_for_int8(model_file: Path) -> tuple[bytes, int]:
    """The rewritten model as bytes for `InferenceSession`, and how many nodes changed."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(model_file))
    graph = model.graph
    producer = {output: node for node in graph.node for output in node.output}
    initializers = {init.name: init for init in graph.initializer}

    def int8_weight(name: str) -> tuple[str, np.ndarray[Any, Any]] | None:
        """(int8 initializer, float scale) when `name` is Mul(Cast(int8 init), scale init)."""
        scaled = producer.get(name)
        if scaled is None or scaled.op_type != "Mul" or scaled.input[1] not in initializers:
            return None
        cast = producer.get(scaled.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
            return None
        if initializers[cast.input[0]].data_type != onnx.TensorProto.INT8:
            return None
        return cast.input[0], numpy_helper.to_array(initializers[scaled.input[1]])

    added: list[Any] = []
    nodes: list[Any] = []
    changed = 0
    for node in graph.node:
        if node.op_type == "MatMul":
            weight = int8_weight(node.input[1])
            if weight is not None:
                quantised, scale = weight
                columns = initializers[quantised].dims[-1]
                if scale.size == columns:  # one scale per output column
                    scale_name, zero_name = f"{quantised}_col_scale", f"{quantised}_col_zero"
                    added.append(numpy_helper.from_array(scale.reshape(-1), scale_name))
                    added.append(numpy_helper.from_array(np.zeros(columns, np.int8), zero_name))
                    nodes.append(
                        helper.make_node(
                            "DynamicQuantizeMatMul",
                            [node.input[0], quantised, scale_name, zero_name],
                            list(node.output),
                            domain=_CONTRIB_DOMAIN,
                            name=f"{node.name}_int8",
                        )
                    )
                    changed += 1
                    continue
        if node.op_type == "Gather" and len(node.input) == 2:
            table = int8_weight(node.input[0])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if table is not None and axis == 0 and table[1].ndim == 2 and table[1].shape[1] == 1:
                quantised, scale = table
                rows, row_scales, rows_float = (f"{node.name}_{s}" for s in ("q", "s", "f"))
                nodes += [
                    helper.make_node("Gather", [quantised, node.input[1]], [rows], axis=0),
                    helper.make_node("Cast", [rows], [rows_float], to=onnx.TensorProto.FLOAT),
                    helper.make_node(
                        "Gather", [f"{quantised}_rows_scale", node.input[1]], [row_scales], axis=0
                    ),
                    helper.make_node("Mul", [rows_float, row_scales], list(node.output)),
                ]
                added.append(numpy_helper.from_array(scale, f"{quantised}_rows_scale"))
                changed += 1
                continue
        nodes.append(node)
    if not changed:
        return model_file.read_bytes(), 0
    del graph.node[:]
    graph.node.extend(_live(nodes, {o.name for o in graph.output}))
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in [*graph.initializer, *added] if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(op.domain == _CONTRIB_DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_CONTRIB_DOMAIN, 1))
    return model.SerializeToString(), changed


def _live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """The nodes the graph's outputs still depend on, in their original order."""
    producer = {output: node for node in nodes for output in node.output}
    needed: set[int] = set()
    stack = [producer[o] for o in outputs if o in producer]
    while stack:
        node = stack.pop()
        if id(node) in needed:
            continue
        needed.add(id(node))
        stack.extend(producer[i] for i in node.input if i in producer)
    return [node for node in nodes if id(node) in needed]


if __name__ == "__main__":  # python -m router.embedding.int8_graph MODEL.onnx TARGET.onnx
    try:
        store(Path(sys.argv[1]), Path(sys.argv[2]))
    except (OSError, IndexError) as exc:
        raise SystemExit(f"int8_graph: {exc}") from None
