"""Public sets of requests paired with the tools or APIs that served them, converted to the
dataset format for the tool-search model's training data.

`python -m models.training.sources --raw .cache/real-requests/raw --out .cache/real-requests`
checks each raw file against `manifest.json` (its sha256) and writes one folder per set
(`catalog.jsonl`, `queries.jsonl`: the splits that may be trained on) and `sources.json`
(what was read, what each split gave). `python -m models.training.data --real-requests
.cache/real-requests` then adds the queries to the triplets.

- `manifest.json`: each set's repository, commit, licence, and every file read, by split,
  with its sha256 and size and what the split gives; and the sets looked at and not kept,
  with why.
- one module per set (`sgd`, `seal_tools`, `api_bank`): `NAME`, and `convert(root, paths,
  split)` from the files in the source's own layout under `root` to a `records.Part`.
- `records`: the dataset format every converter writes.
- `build`: the checks and the writing; `reading`: what `models.training.data` reads back.

A set's test split is its own evaluation: it never reaches the training folder, and is
converted only into a folder of its own (`--test-out`), for the leave-one-set-out table.
The raw data is never committed; only the converters and the manifest are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from models.training.sources import api_bank, seal_tools, sgd
from models.training.sources.records import Part

Converter = Callable[[Path, Sequence[str], str], Part]

CONVERTERS: dict[str, Converter] = {
    sgd.NAME: sgd.convert,
    seal_tools.NAME: seal_tools.convert,
    api_bank.NAME: api_bank.convert,
}
MANIFEST = Path(__file__).with_name("manifest.json")
TEST = "test"
"""The split that is never trained on."""
