"""Large catalogs: in-process exact search against pgvector's HNSW index in the shared store.

    python -m benchmarks.store_scale [--sizes 20000,100000,250000] [--ef 40,100,200,400]
    python -m benchmarks.store_scale --quick        # tiny sizes, the hashing embedder
    python -m benchmarks.store_scale --table-only   # re-render the README section

At each size (`corpus`: the labelled sets' tools, the pools' real tools, then renamed
copies), one throwaway PostgreSQL with pgvector (`tests/support/postgres.py`) is filled once, and:

- `search`: in this process, for each labelled query, the dense step alone and the whole
  hybrid `Retriever.search` (query embedding included), exact and HNSW at each `ef_search`,
  interleaved query by query; the overlap of HNSW's dense top 5 and top 100 with the exact
  scan's; Recall@5 on the labelled queries, exact against HNSW, with a paired interval;
- `replica`: a fresh process per mode and size, as a new replica starts against the filled
  store: seconds until its retriever is ready, and its resident memory.

Writes `benchmarks/results/store_scale.json` and the section between the store-scale
markers of `benchmarks/README.md` (`render`).
"""
