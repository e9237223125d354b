"""`session.x64quantprecision` only where int8 products saturate (issue 53, item 3): the CPU
check, the override, and the int8 model's vectors against the fp32 reference (the same
model on sentence-transformers) with the setting forced on and forced off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from router.core.errors import EmbeddingError
from router.embedding.base import Embedder, Vectors
from router.embedding.manifest import DEFAULT_MODEL, resolve_model
from router.embedding.onnx import OnnxEmbedder
from router.embedding.sessions import (
    PRECISE_ENV,
    cpu_flags,
    int8_products_saturate,
    saturates,
)
from tests.conftest import BASE_MODEL
from tests.embedding.test_embedding_backends import tool_texts

AVX2 = frozenset({"sse4_1", "avx", "avx2", "fma"})
AVX512 = AVX2 | {"avx512f", "avx512bw", "avx512vl"}


@pytest.mark.parametrize(
    ("machine", "flags", "expected"),
    [
        ("x86_64", AVX2, True),
        ("x86_64", AVX512, True),
        ("x86_64", AVX512 | {"avx512_vnni"}, False),
        ("x86_64", AVX2 | {"avx_vnni"}, False),
        ("AMD64", AVX512 | {"amx_int8"}, False),
        ("x86_64", None, True),  # flags unknown: the safe side
        ("aarch64", frozenset({"asimd", "asimddp"}), False),
        ("arm64", None, False),
    ],
)
def test_only_an_x86_cpu_without_vnni_saturates(
    machine: str, flags: frozenset[str] | None, expected: bool
) -> None:
    assert saturates(machine, flags) is expected


def test_the_flags_come_from_the_first_processor_of_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512_vnni\n\n"
        "processor\t: 1\nflags\t\t: fpu\n",
        encoding="utf-8",
    )
    assert cpu_flags(cpuinfo) == frozenset({"fpu", "avx2", "avx512_vnni"})
    assert cpu_flags(tmp_path / "absent") is None


def test_the_variable_overrides_the_cpu_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRECISE_ENV, "1")
    assert int8_products_saturate() is True
    monkeypatch.setenv(PRECISE_ENV, "0")
    assert int8_products_saturate() is False
    monkeypatch.setenv(PRECISE_ENV, "yes")
    with pytest.raises(EmbeddingError, match=PRECISE_ENV):
        int8_products_saturate()


@pytest.fixture(scope="module")
def rewrites(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the int8 rewrites (the same whatever the setting)."""
    return tmp_path_factory.mktemp("int8")


def _vectors(
    model: str, setting: str, cache: Path, texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> Vectors:
    monkeypatch.setenv(PRECISE_ENV, setting)
    embedder = OnnxEmbedder(resolve_model(model), cache)
    embedder.load()  # the session is made now, under the setting
    monkeypatch.delenv(PRECISE_ENV)
    return embedder.embed_documents(texts)


def _cpu_saturates(monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.delenv(PRECISE_ENV, raising=False)
    return int8_products_saturate()


@pytest.fixture(scope="module")
def reference(torch_embedder: Embedder) -> tuple[list[str], Vectors]:
    """Real tool texts and their vectors from the fp32 model (sentence-transformers)."""
    texts = tool_texts(200)
    return texts, torch_embedder.embed_documents(texts)


@pytest.mark.parametrize("setting", ["1", "0"], ids=["forced-on", "forced-off"])
def test_int8_vectors_agree_with_the_fp32_reference(
    setting: str,
    rewrites: Path,
    reference: tuple[list[str], Vectors],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if setting == "0" and _cpu_saturates(monkeypatch):
        pytest.skip("this CPU saturates int8 products without the setting (so it is kept on)")
    texts, reference_vectors = reference
    int8 = _vectors(BASE_MODEL, setting, rewrites, texts, monkeypatch)
    cosines = (int8 * reference_vectors).sum(axis=1)
    assert int8.shape == reference_vectors.shape == (len(texts), 384)
    assert float(cosines.mean()) >= 0.99, cosines.mean()
    assert float(cosines.min()) >= 0.97, cosines.min()


@pytest.mark.parametrize("model", [DEFAULT_MODEL, BASE_MODEL])
def test_where_the_cpu_does_not_saturate_the_setting_changes_no_vector(
    model: str, rewrites: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So the embedding cache's key need not name it: vectors made either way are one."""
    if _cpu_saturates(monkeypatch):
        pytest.skip("this CPU saturates int8 products without the setting")
    texts = tool_texts(60)
    on = _vectors(model, "1", rewrites, texts, monkeypatch)
    off = _vectors(model, "0", rewrites, texts, monkeypatch)
    assert np.allclose(on, off, atol=1e-6), float(np.abs(on - off).max())
