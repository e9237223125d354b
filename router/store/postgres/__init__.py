"""The shared store in PostgreSQL with pgvector: its connections, schema, the COPY fill, and the
exact and HNSW reads.
"""
