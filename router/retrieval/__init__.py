"""Retrieval: dense, lexical and fused top-k over a catalog snapshot."""

from router.retrieval.retriever import Retriever, SearchMode
from router.retrieval.types import ScoredTool

__all__ = ["Retriever", "ScoredTool", "SearchMode"]
