"""Where tool vectors live and how the dense signal searches them.

The default is local: the SQLite embedding cache in the cache folder and an exact scan in
memory (`LocalStore`). `router.store` names a shared PostgreSQL with pgvector instead
(`router.store.postgres.store`): replicas read the vectors the first one embedded and search them
in memory or through the database's HNSW index.
"""
