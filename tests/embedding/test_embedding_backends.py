"""The default onnxruntime embedder against the sentence-transformers one, and the files
that define a model: pooling, normalisation, checksums, cache keys."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from router.core.catalog import Catalog
from router.core.errors import EmbeddingError
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import embed_records
from router.embedding.loading import DeferredEmbedder, load_embedder
from router.embedding.manifest import known_models, resolve_model
from router.embedding.onnx import OnnxEmbedder, read_pipeline
from router.evaluation.dataset import load_catalog
from tests.conftest import EXAMPLE_CATALOG, SHARED_DATA, TORCH_MODEL

MODEL_FOLDER = Path(__file__).resolve().parents[2] / "models" / "all-MiniLM-L6-v2"


def tool_texts(limit: int = 400) -> list[str]:
    """Real tool search texts: the example catalog, plus MSC-Bench's tools where present."""
    catalog, _ = load_catalog(EXAMPLE_CATALOG)
    texts = [r.search_text for r in catalog.records]
    public = SHARED_DATA / "msc_bench" / "catalog.jsonl"
    if public.is_file():
        more, _ = load_catalog(public)
        texts += [r.search_text for r in more.records[: limit - len(texts)]]
    return texts


def test_onnx_vectors_agree_with_sentence_transformers_on_real_tool_texts(
    base_embedder: Embedder, torch_embedder: Embedder
) -> None:
    """Every fourth of 400 real texts by length, the longest first: 100 texts from the
    longest to the shortest, which PyTorch embeds in 4.6 s here (all 400: 11.2 s), so the
    test fits its timeout on a loaded machine. Their cosines: mean 0.995, min 0.988, the
    400's worst text among them; a backend that pools, normalises or truncates otherwise
    fails on every text, not on one."""
    texts = sorted(tool_texts(), key=len, reverse=True)[::4]
    onnx_vectors = base_embedder.embed_documents(texts)
    torch_vectors = torch_embedder.embed_documents(texts)
    cosines = (onnx_vectors * torch_vectors).sum(axis=1)
    assert onnx_vectors.shape == torch_vectors.shape == (len(texts), 384)
    assert float(cosines.mean()) >= 0.99, cosines.mean()
    assert float(cosines.min()) >= 0.97, cosines.min()
    queries = ["what time is it in Tokyo", "remember that Alice works at Acme"]
    query_cosines = base_embedder.embed_queries(queries) * torch_embedder.embed_queries(queries)
    assert float(query_cosines.sum(axis=1).min()) >= 0.99


def test_batching_never_changes_a_vector(real_embedder: Embedder) -> None:
    """Length-sorted, padded batches give each text the vector it gets alone."""
    texts = tool_texts(60)
    together = real_embedder.embed_documents(texts)
    alone = np.stack([real_embedder.embed_documents([t])[0] for t in texts[:12]])
    assert np.allclose(together[:12], alone, atol=2e-3)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-4)


def test_backends_have_their_own_cache_keys(
    tmp_path: Path, real_embedder: Embedder, torch_embedder: Embedder
) -> None:
    assert real_embedder.model_id != torch_embedder.model_id
    assert "onnx" in real_embedder.model_id and "sentence-transformers" in torch_embedder.model_id
    catalog, _ = load_catalog(EXAMPLE_CATALOG)
    cache = EmbeddingCache(tmp_path)
    _, first = embed_records(catalog.records, real_embedder, cache)
    _, second = embed_records(catalog.records, torch_embedder, cache)
    assert first.embedded == second.embedded == len(catalog)  # nothing reused across backends


def test_the_manifest_default_runs_on_onnx_and_the_torch_entry_on_sentence_transformers() -> None:
    models = known_models()
    assert models["all-MiniLM-L6-v2"].backend == "onnx"
    assert models[TORCH_MODEL].backend == "sentence-transformers"
    default = load_embedder(None)
    assert isinstance(default, DeferredEmbedder)
    assert isinstance(default.backend, OnnxEmbedder)


def test_pooling_and_normalisation_come_from_the_model_files(tmp_path: Path) -> None:
    pipeline = read_pipeline(MODEL_FOLDER, None)
    assert (pipeline.pooling, pipeline.normalize, pipeline.max_seq_length) == ("mean", True, 256)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    (tmp_path / "modules.json").write_text(json.dumps([{"type": "x.Transformer"}]))
    assert read_pipeline(tmp_path, 128) == replace(
        pipeline, pooling="cls", normalize=False, max_seq_length=128
    )
    # sentence-transformers 6 writes the mode as one key
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"embedding_dimension": 384, "pooling_mode": "max", "include_prompt": True})
    )
    assert read_pipeline(tmp_path, 128).pooling == "max"


def local_onnx_model(directory: Path) -> Path:
    """A local ONNX model folder: the packaged model file beside the bundled tokenizer."""
    spec = resolve_model(None)
    from router.embedding.manifest import locate

    shutil.copytree(MODEL_FOLDER, directory)
    shutil.copy(locate(spec.source, spec), directory / "model.onnx")
    return directory


def test_a_local_onnx_folder_runs_on_onnx_with_its_own_cache_key(tmp_path: Path) -> None:
    folder = local_onnx_model(tmp_path / "mini")
    spec = resolve_model(str(folder))
    assert spec.backend == "onnx" and spec.id.startswith("local:mini:")
    embedder = load_embedder(str(folder))
    vector = embedder.embed_query("what time is it")
    assert vector.shape == (384,)
    assert embedder.model_id != load_embedder(None).model_id


def test_a_model_file_that_fails_its_checksum_is_refused(tmp_path: Path) -> None:
    folder = local_onnx_model(tmp_path / "mini")
    spec = replace(resolve_model(None), source=f"path:{folder / 'model.onnx'}", sha256="0" * 64)
    with pytest.raises(EmbeddingError, match="does not match the sha256"):
        OnnxEmbedder(spec).load()


def test_a_missing_model_package_says_what_to_install() -> None:
    spec = replace(resolve_model(None), source="package:no_such_pkg", install="pip install x-y")
    with pytest.raises(EmbeddingError, match="pip install x-y"):
        OnnxEmbedder(spec).embed_query("hi")


def test_an_empty_catalog_embeds_to_an_empty_matrix(real_embedder: Embedder) -> None:
    vectors, stats = embed_records(Catalog.from_specs([]).records, real_embedder)
    assert vectors.shape == (0, 384) and stats.total == 0


@pytest.mark.processes
def test_the_int8_rewrite_is_stored_once_and_a_damaged_copy_is_made_again(
    tmp_path: Path,
) -> None:
    spec = resolve_model(None)
    first = OnnxEmbedder(spec, tmp_path)
    expected = first.embed_query("what time is it in Tokyo")
    stored = list((tmp_path / "models").glob("*.onnx"))
    assert len(stored) == 1
    stored[0].write_bytes(b"not a model")
    again = OnnxEmbedder(spec, tmp_path).embed_query("what time is it in Tokyo")
    assert np.allclose(again, expected, atol=1e-6)
    assert OnnxEmbedder(spec, tmp_path).embed_query("what time is it in Tokyo").shape == (384,)
