"""Retrieval quality over a query set, and the dataset format it reads."""
