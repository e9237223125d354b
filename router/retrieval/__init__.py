"""Retrieval: dense, lexical and fused top-k over a catalog snapshot.

Import `router.retrieval.retriever` for the `Retriever`: this package itself stays light
(`router.retrieval.types` is read by the server before numpy and bm25s are loaded).
"""
