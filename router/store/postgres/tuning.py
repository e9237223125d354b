"""The shared store's tuned defaults, from the measured figures (benchmarks/store_scale).

`router.store.exact_max_tools` and `router.store.ef_search` left unset in a configuration
mean these values.
"""

from __future__ import annotations

__all__ = ["DEFAULT_EF_SEARCH", "DEFAULT_EXACT_MAX_TOOLS"]

DEFAULT_EXACT_MAX_TOOLS = 60_000
"""`router.store.search: auto` scans in-process up to this many tools, HNSW above: where
pgvector's HNSW starts to answer the hybrid search faster than the exact scan
(`recommendation` in benchmarks/results/store_scale.json; tests/benchmarks/test_store_scale_quick.py
keeps the two equal)."""
DEFAULT_EF_SEARCH = 400
"""The fastest setting within 0.01 Recall@5 of exact search (upper bound of its 95% interval)
at every size measured. pgvector builds the graph in parallel, so its recall varies between
builds, and a smaller setting that passes in one run may fail in the next: the choice is the
committed run's (`recommendation` in benchmarks/results/store_scale.json)."""
