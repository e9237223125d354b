"""Known embedding models, read from the packaged `models/manifest.json`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from router.errors import EmbeddingError

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Where a model's weights come from and how to prompt it."""

    id: str
    source: str
    install: str = ""
    dimension: int | None = None
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = None


@cache
def known_models() -> dict[str, ModelSpec]:
    text = resources.files("router.models").joinpath("manifest.json").read_text("utf-8")
    raw = json.loads(text)
    fields = set(ModelSpec.__dataclass_fields__)
    return {
        entry["id"]: ModelSpec(**{k: v for k, v in entry.items() if k in fields})
        for entry in raw["models"]
    }


def _directory_identity(path: Path) -> str:
    """A hash of the files that define a local model, so a swapped model gets a new cache key."""
    digest = hashlib.sha256()
    for name in ("modules.json", "config.json", "config_sentence_transformers.json"):
        candidate = path / name
        if candidate.is_file():
            digest.update(name.encode() + candidate.read_bytes())
    weights = sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin"))
    for file in weights:
        digest.update(f"{file.name}:{file.stat().st_size}:{file.stat().st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def resolve_model(name: str | None) -> ModelSpec:
    """A manifest id, or a path to a local sentence-transformers directory."""
    name = name or DEFAULT_MODEL
    models = known_models()
    if name in models:
        return models[name]
    path = Path(name).expanduser()
    if path.is_dir():
        path = path.resolve()
        return ModelSpec(id=f"local:{path.name}:{_directory_identity(path)}", source=f"path:{path}")
    raise EmbeddingError(
        f"unknown model {name!r}: use one of {', '.join(sorted(models))} "
        "or the path of a local sentence-transformers directory"
    )
