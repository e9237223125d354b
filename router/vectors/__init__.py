"""Dense vectors and their search: the leaf that retrieval (which ranks with them) and the
stores (which hold them) both build on, and neither owns."""
