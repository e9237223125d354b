"""A trained sentence-transformers model as the router's ONNX model folder:
`python -m models.training.export TRAINED_DIR OUT_DIR`.

The transformer is exported to ONNX (inputs `input_ids`, `attention_mask`, `token_type_ids`;
output the token states), then its weights are stored as the packaged default stores them:
each matrix-product weight as int8 with one float scale per output column, turned back into
float32 in the graph (`Mul(Cast(W_int8), scale)`), and each embedding table as int8 with one
scale per row. That is the form `router/embedding/int8_graph.py` rewrites at load into
onnxruntime's `DynamicQuantizeMatMul` and int8 row gathers, so the trained model runs on the
same int8 path as today's default. Symmetric quantisation, zero point 0. The folder also
gets `tokenizer.json`, the pooling config, `modules.json` and `sentence_bert_config.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

MODEL_FILE = "model.onnx"
_TOKENIZER_FILES = ("tokenizer.json",)
_CONFIG_FILES = ("modules.json", "sentence_bert_config.json")


def export_fp32(trained: Path, target: Path) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(trained), device="cpu")
    transformer: Any = model[0].auto_model
    transformer.eval()

    export_transformer(transformer, "last_hidden_state", target, {0: "batch", 1: "tokens"})


def export_transformer(
    inner: Any, output: str, target: Path, output_axes: dict[int, str], batch: int = 1
) -> None:
    """A BERT-style transformer's `output` as an ONNX graph at `target`: inputs `input_ids`,
    `attention_mask` and `token_type_ids`, dynamic in batch and tokens."""
    import torch

    class Output(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            found = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return getattr(found, output)

    ids = torch.ones((batch, 8), dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            Output(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=[output],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                output: output_axes,
            },
            opset_version=17,
            dynamo=False,
        )


def quantise(source: Path, target: Path) -> dict[str, int]:
    """Store the weights of `source` as int8 with their scales (see the module docstring)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    uses: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    replaced: dict[str, tuple[Any, Any, list[Any]]] = {}
    counts = {"matmul": 0, "gather": 0}

    def stored(name: str, per: str) -> str:
        """The name of the float32 value rebuilt from int8 (made once per initializer)."""
        if name in replaced:
            return f"{name}_dequantised"
        weights = numpy_helper.to_array(initializers[name]).astype(np.float32)
        axis = 0 if per == "column" else 1
        largest = np.abs(weights).max(axis=axis, keepdims=True)
        scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
        quantised = np.clip(np.round(weights / scale), -127, 127).astype(np.int8)
        q_name, s_name, f_name = f"{name}_int8", f"{name}_scale", f"{name}_float"
        nodes = [
            helper.make_node("Cast", [q_name], [f_name], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [f_name, s_name], [f"{name}_dequantised"]),
        ]
        replaced[name] = (
            numpy_helper.from_array(quantised, q_name),
            numpy_helper.from_array(scale if per == "row" else scale.reshape(-1), s_name),
            nodes,
        )
        return f"{name}_dequantised"

    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            if len(initializers[node.input[1]].dims) == 2:
                node.input[1] = stored(node.input[1], "column")
                counts["matmul"] += 1
        elif node.op_type == "Gather" and node.input[0] in initializers:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if axis == 0 and len(initializers[node.input[0]].dims) == 2:
                node.input[0] = stored(node.input[0], "row")
                counts["gather"] += 1
    prefix = [n for _, _, nodes in replaced.values() for n in nodes]
    kept = [init for init in graph.initializer if init.name not in replaced]
    added = [t for q, s, _ in replaced.values() for t in (q, s)]
    nodes = prefix + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return counts


def export(trained: Path, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = Path(scratch) / "fp32.onnx"
        export_fp32(trained, fp32)
        counts = quantise(fp32, out / MODEL_FILE)
    for name in (*_TOKENIZER_FILES, *_CONFIG_FILES):
        shutil.copy2(trained / name, out / name)
    (out / "1_Pooling").mkdir(exist_ok=True)
    shutil.copy2(trained / "1_Pooling" / "config.json", out / "1_Pooling" / "config.json")
    digest = hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()
    return {"sha256": digest, "bytes": (out / MODEL_FILE).stat().st_size, **counts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.training.export")
    parser.add_argument("trained", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    sys.stdout.write(json.dumps(export(args.trained, args.out), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
