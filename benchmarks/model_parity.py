"""The shipped tool-search model against its own fp32 PyTorch form, and its cold throughput
against the base model's.

    python -m benchmarks.model_parity --torch .cache/trained/tools

`--torch` is the sentence-transformers checkpoint `python -m models.train` wrote (the
`models/minilm-l6-tools` ONNX file is its int8 export; the checkpoint is not committed, so
this runs where the model was trained). On tool texts of the public pools and requests made
from them, it gives:
- **parity**: the cosine of each int8 ONNX vector with the fp32 PyTorch vector of the same
  text (mean and minimum, tool texts and requests apart);
- **cold throughput**: tool texts embedded a second by a freshly loaded embedder, for the
  trained model and the base model (both int8 ONNX, the router's backend) and the fp32
  PyTorch checkpoint, in rounds that alternate the three so that a busy machine slows each
  alike; the ratios are what count. Loading is timed apart.

Results: benchmarks/results/model-parity.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import head_commit
from benchmarks.suite.data import load_pool
from router.core.catalog import Catalog
from router.embedding.base import Embedder
from router.embedding.loading import backend_embedder, load_embedder
from router.embedding.manifest import resolve_model

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "model-parity.json"
TRAINED = "minilm-l6-tools"
BASE = "all-MiniLM-L6-v2"


def _texts(data: Path, count: int, seed: int) -> tuple[list[str], list[str]]:
    """Search texts of pool tools, as the router builds them, and a request from each
    description's first words."""
    pool = load_pool(data)
    specs = [t.spec for t in random.Random(seed).sample(pool, min(count, len(pool)))]
    records = Catalog.from_specs(specs).records
    requests = [" ".join(r.description.split()[:12]) or r.name for r in records]
    return [r.search_text for r in records], requests


def _cosines(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> dict[str, float]:
    values = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"mean": round(float(values.mean()), 4), "min": round(float(values.min()), 4)}


def _cold(make: Any, texts: list[str]) -> tuple[float, float]:
    """Seconds to load a fresh embedder, and texts a second it then embeds."""
    started = time.perf_counter()
    embedder: Embedder = make()
    embedder.load()
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return loaded, len(texts) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model_parity")
    parser.add_argument("--torch", type=Path, required=True, help="the fp32 checkpoint")
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args(argv)
    texts, requests = _texts(options.data, options.texts, seed=0)

    onnx = load_embedder(TRAINED)

    def torch_model() -> Embedder:
        # the checkpoint keeps the training's 128-token cut; the router embeds up to the
        # manifest's length, so the fp32 model is compared at that length too
        spec = resolve_model(str(options.torch))
        length = resolve_model(TRAINED).max_seq_length
        return backend_embedder(dataclasses.replace(spec, max_seq_length=length))

    torch = torch_model()
    parity = {
        "tool_texts": _cosines(onnx.embed_documents(texts), torch.embed_documents(texts)),
        "requests": _cosines(onnx.embed_queries(requests), torch.embed_queries(requests)),
    }
    makers = {
        "trained_onnx_int8": lambda: load_embedder(TRAINED),
        "base_onnx_int8": lambda: load_embedder(BASE),
        "trained_torch_fp32": torch_model,
    }
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in makers}
    for _ in range(options.rounds):
        for label, make in makers.items():
            runs[label].append(_cold(make, texts))
    throughput = {
        label: {
            "load_s": round(float(np.median([r[0] for r in rows])), 3),
            "docs_per_s": round(float(np.median([r[1] for r in rows])), 1),
        }
        for label, rows in runs.items()
    }
    base = throughput["base_onnx_int8"]["docs_per_s"]
    for row in throughput.values():
        row["vs_base_onnx"] = round(row["docs_per_s"] / base, 3)
    report = {
        "schema": "mcp-router.model-parity/1",
        "commit": head_commit(),
        "texts": len(texts),
        "rounds": options.rounds,
        "parity_onnx_int8_vs_torch_fp32": parity,
        "cold_throughput": throughput,
    }
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
